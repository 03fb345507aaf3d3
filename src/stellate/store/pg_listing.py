"""PostgreSQL's keyset pages of the session listing (`Store.list_digests_page` and its kin)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from stellate.store._listing_sql import EXISTS_SQL, SqlListing
from stellate.store.digests import bad_cursor
from stellate.store.types import SessionId

__all__ = ["PostgresListing"]

_EXISTS = EXISTS_SQL.format(p="%s")


class PostgresListing(SqlListing):
    """The paged listing methods of `PostgresStore`, over its pool (before `BaseStore` in its bases)."""

    placeholder = "%s"
    _select: Callable[[str, Sequence[Any]], Coroutine[Any, Any, list[Any]]]

    async def _page(self, sql: str, params: tuple[Any, ...], after: SessionId | None, limit: int) -> list[Any]:
        rows = await self._select(sql, params)
        if after is not None and len(rows) < limit and not await self._select(_EXISTS, (after, self.space)):
            raise bad_cursor(after)
        return rows
