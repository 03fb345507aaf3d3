"""PostgreSQL's keyset pages of the session listing (`Store.list_digests_page` and its kin)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from stellate.store._listing_sql import EXISTS_SQL, node_from_row, page_sql
from stellate.store._sql import digest_from_row, record_from_row
from stellate.store.digests import SessionDigest, TopologyNode, bad_cursor
from stellate.store.types import SessionId, SessionRecord

__all__ = ["PostgresListing"]

_EXISTS = EXISTS_SQL.format(p="%s")


class PostgresListing:
    """The paged listing methods of `PostgresStore`, over its pool (before `BaseStore` in its bases)."""

    space: str
    _select: Callable[[str, Sequence[Any]], Coroutine[Any, Any, list[Any]]]

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
            placeholder="%s", space=self.space, after=after, limit=limit, parent_id=parent_id, status=status
        )
        return [digest_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """A keyset page of `list_sessions` (see `Store.list_sessions_page`)."""
        sql, params = page_sql(placeholder="%s", space=self.space, after=after, limit=limit, listed="records")
        return [record_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A keyset page of the forest's nodes, childless (see `Store.list_nodes_page`)."""
        sql, params = page_sql(placeholder="%s", space=self.space, after=after, limit=limit, listed="nodes")
        return [node_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def _page(self, sql: str, params: tuple[Any, ...], after: SessionId | None, limit: int) -> list[Any]:
        rows = await self._select(sql, params)
        if after is not None and len(rows) < limit and not await self._select(_EXISTS, (after, self.space)):
            raise bad_cursor(after)
        return rows
