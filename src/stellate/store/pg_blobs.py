"""PostgreSQL's blobs (`stellate.store.blobs`): the ``blobs`` table, written and swept in one transaction each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from stellate.store._blob_sql import REFERRING_PATTERN, blob_sql
from stellate.store.blobs import BLOB_GRACE_MS, Blob, blob_hash, blob_not_found, referenced_hashes

__all__ = ["PostgresBlobs"]

_SQL = blob_sql("%s")
# Other transactions may put and refer meanwhile; the sweep locks the space's blob rows it deletes.
_OLD_FOR_UPDATE = _SQL["old"] + " FOR UPDATE"


class PostgresBlobs:
    """The `BlobStore` methods of `PostgresStore`, over its pool."""

    space: str
    clock: Callable[[], int]
    _transaction: Callable[..., AbstractAsyncContextManager[AsyncConnection[TupleRow]]]

    async def put_blob(self, data: bytes, *, media_type: str) -> str:
        """Store ``data`` once per space; putting it again refreshes its age. Returns its sha256."""
        sha256 = blob_hash(data)
        async with self._transaction("cannot store the blob", sha256=sha256) as conn:
            await conn.execute(_SQL["put"], (self.space, sha256, media_type, len(data), self.clock(), data))
        return sha256

    async def get_blob(self, sha256: str) -> Blob:
        """The blob under ``sha256``; raises `NotFoundError` (code ``blob_not_found``) when there is none."""
        async with self._transaction("cannot read the blob", sha256=sha256) as conn:
            row = await (await conn.execute(_SQL["get"], (self.space, sha256))).fetchone()
        if row is None:
            raise blob_not_found(sha256)
        return Blob(sha256=sha256, media_type=row[0], data=bytes(row[1]), created_at=int(row[2]))

    async def has_blobs(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` this space holds."""
        query = "SELECT sha256 FROM blobs WHERE space = %s AND sha256 = ANY(%s)"
        async with self._transaction("cannot read blobs") as conn:
            rows = await (await conn.execute(query, (self.space, list(hashes)))).fetchall()
        return {str(r[0]) for r in rows}

    async def delete_unreferenced_blobs(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """Delete the blobs no event of the space refers to, put more than ``grace_ms`` ago."""
        async with self._transaction("cannot sweep blobs") as conn:
            old = [
                str(r[0])
                for r in await (await conn.execute(_OLD_FOR_UPDATE, (self.space, self.clock() - grace_ms))).fetchall()
            ]
            if not old:
                return []
            referring = await (await conn.execute(_SQL["referring"], (self.space, REFERRING_PATTERN))).fetchall()
            kept = referenced_hashes(str(r[0]) for r in referring)
            doomed = sorted(h for h in old if h not in kept)
            await conn.execute("DELETE FROM blobs WHERE space = %s AND sha256 = ANY(%s)", (self.space, doomed))
        return doomed
