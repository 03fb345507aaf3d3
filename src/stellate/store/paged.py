"""Keyset pages of the session listing cut from the full listing: `BaseStore`'s fallback.

A backend without a page query of its own gets these; the SQL backends and the memory store read each page as such.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stellate.store.digests import SessionDigest, TopologyNode, bad_cursor, node_of, page_after
from stellate.store.types import SessionId, SessionRecord

__all__ = ["PagedListing"]


class PagedListing:
    """`Store.list_digests_page`, `list_sessions_page` and `list_nodes_page` over the full listings."""

    if TYPE_CHECKING:  # provided by `BaseStore` and its backends

        async def list_sessions(
            self, *, parent_id: SessionId | None = None, roots: bool = False
        ) -> list[SessionRecord]:
            """See `Store.list_sessions`."""

        async def list_digests(self) -> list[SessionDigest]:
            """See `BaseStore.list_digests`."""

    async def list_digests_page(
        self,
        *,
        after: SessionId | None = None,
        limit: int = 100,
        parent_id: SessionId | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """A keyset page of `list_digests` (see `Store.list_digests_page`); here over the full listing."""
        return page_after(await self.list_digests(), after=after, limit=limit, parent_id=parent_id, status=status)

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """A keyset page of `list_sessions` (see `Store.list_sessions_page`); here over the full listing."""
        records = await self.list_sessions()
        start = 0 if after is None else next((i + 1 for i, r in enumerate(records) if r.id == after), None)
        if start is None:
            raise bad_cursor(str(after))
        return records[start : start + limit]

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A keyset page of the forest's childless nodes (see `Store.list_nodes_page`); here over the records."""
        return [node_of(r) for r in await self.list_sessions_page(after=after, limit=limit)]
