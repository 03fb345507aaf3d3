"""SQLite's keyset pages of the session listing (`Store.list_digests_page` and its kin)."""

from __future__ import annotations

import sqlite3
from typing import Any

from stellate.store._listing_sql import EXISTS_SQL, SqlListing
from stellate.store.digests import bad_cursor
from stellate.store.sqlite_connections import SqliteConnections, translate
from stellate.store.types import SessionId

__all__ = ["SqliteListing"]

_EXISTS = EXISTS_SQL.format(p="?")
_SHORT_PAGE = 1024
"""Pages of up to this many rows may be read on the event loop's own connection (a millisecond or two)."""


class SqliteListing(SqlListing):
    """The paged listing methods of `SqliteStore`, over its connections (before `BaseStore` in its bases)."""

    placeholder = "?"
    _db: SqliteConnections

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
