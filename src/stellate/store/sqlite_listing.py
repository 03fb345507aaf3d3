"""SQLite's keyset pages of the session listing (`Store.list_digests_page` and its kin)."""

from __future__ import annotations

import sqlite3
from typing import Any

from stellate.store._listing_sql import EXISTS_SQL, node_from_row, page_sql
from stellate.store._sql import digest_from_row, record_from_row
from stellate.store.digests import SessionDigest, TopologyNode, bad_cursor
from stellate.store.sqlite_connections import SqliteConnections, translate
from stellate.store.types import SessionId, SessionRecord

__all__ = ["SqliteListing"]

_EXISTS = EXISTS_SQL.format(p="?")
_SHORT_PAGE = 1024
"""Pages of up to this many rows may be read on the event loop's own connection (a millisecond or two)."""


class SqliteListing:
    """The paged listing methods of `SqliteStore`, over its connections (before `BaseStore` in its bases)."""

    space: str
    _db: SqliteConnections

    async def list_digests_page(
        self,
        *,
        after: SessionId | None = None,
        limit: int = 100,
        parent_id: SessionId | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """A keyset page of the digests (see `Store.list_digests_page`)."""
        sql, params = page_sql(
            placeholder="?", space=self.space, after=after, limit=limit, parent_id=parent_id, status=status
        )
        return [digest_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """A keyset page of `list_sessions` (see `Store.list_sessions_page`)."""
        sql, params = page_sql(placeholder="?", space=self.space, after=after, limit=limit, listed="records")
        return [record_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A keyset page of the forest's nodes, childless (see `Store.list_nodes_page`)."""
        sql, params = page_sql(placeholder="?", space=self.space, after=after, limit=limit, listed="nodes")
        return [node_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def _page(self, sql: str, params: tuple[Any, ...], after: SessionId | None, limit: int) -> list[Any]:
        args = (sql, params, after, self.space, limit)
        if limit <= _SHORT_PAGE:
            return await self._db.run_short(_page_sync, *args, writes=False)
        return await self._db.run(_page_sync, *args)


def _page_sync(
    db: sqlite3.Connection, sql: str, params: tuple[Any, ...], after: SessionId | None, space: str, limit: int
) -> list[Any]:
    try:
        rows = db.execute(sql, params).fetchall()
        if after is not None and len(rows) < limit and db.execute(_EXISTS, (after, space)).fetchone() is None:
            raise bad_cursor(after)
        return rows
    except sqlite3.Error as exc:
        raise translate(exc, "read failed") from exc
