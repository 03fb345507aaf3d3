"""SQLite's blobs (`stellate.store.blobs`): the ``blobs`` table, written and swept in one transaction each."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from stellate.store._blob_sql import REFERRING_PATTERN, blob_sql
from stellate.store.blobs import BLOB_GRACE_MS, Blob, blob_hash, blob_not_found, referenced_hashes
from stellate.store.sqlite_connections import SqliteConnections, WriteTransaction, translate

__all__ = ["SqliteBlobs"]

_SQL = blob_sql("?")


class SqliteBlobs:
    """The `BlobStore` methods of `SqliteStore`, over its connections."""

    space: str
    clock: Callable[[], int]
    _db: SqliteConnections

    async def put_blob(self, data: bytes, *, media_type: str) -> str:
        """Store ``data`` once per space; putting it again refreshes its age. Returns its sha256."""
        sha256 = blob_hash(data)
        await self._db.run(_put, (self.space, sha256, media_type, len(data), self.clock(), data))
        return sha256

    async def get_blob(self, sha256: str) -> Blob:
        """The blob under ``sha256``; raises `NotFoundError` (code ``blob_not_found``) when there is none."""
        rows = await self._db.run(_select, _SQL["get"], (self.space, sha256))
        if not rows:
            raise blob_not_found(sha256)
        media_type, data, created_at = rows[0]
        return Blob(sha256=sha256, media_type=media_type, data=bytes(data), created_at=created_at)

    async def has_blobs(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` this space holds."""
        return {h for h in hashes if await self._db.run(_select, _SQL["has"], (self.space, h))}

    async def delete_unreferenced_blobs(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """Delete the blobs no event of the space refers to, put more than ``grace_ms`` ago."""
        deleted: list[str] = await self._db.run(_sweep, self.space, self.clock() - grace_ms)
        return deleted


def _put(db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    with WriteTransaction(db):
        db.execute(_SQL["put"], row)


def _select(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, "cannot read blobs") from exc


def _sweep(db: sqlite3.Connection, space: str, put_before: int) -> list[str]:
    with WriteTransaction(db):
        referring = db.execute(_SQL["referring"], (space, REFERRING_PATTERN)).fetchall()
        kept = referenced_hashes(row[0] for row in referring)
        doomed = sorted(row[0] for row in db.execute(_SQL["old"], (space, put_before)) if row[0] not in kept)
        db.executemany(_SQL["delete"], [(space, sha256) for sha256 in doomed])
    return doomed
