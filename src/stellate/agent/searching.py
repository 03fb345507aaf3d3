"""What `Agent` offers to find messages: full-text search over the forest's message text.

A base class of `Agent`, like `stellate.agent.reading.AgentReads`; the rules of what matches are the store's
(`stellate.store.search`).
"""

from __future__ import annotations

from stellate.agent.parts import AgentParts
from stellate.errors import UsageError
from stellate.store.search import MessageSearch, SearchHit, SearchPage, SearchQuery

__all__ = ["AgentSearch", "SearchHit", "SearchPage"]


class AgentSearch(AgentParts):
    """Message search; `Agent` provides the store."""

    async def search(
        self, query: str, *, include_archived: bool = False, limit: int = 20, offset: int = 0
    ) -> SearchPage:
        """Messages (user and assistant) whose text contains every term of ``query``, ignoring case.

        A message inherited by forks is reported once, at the session that holds it in its own log. Snippets
        and labels are untrusted text.

        Args:
            query: Terms separated by whitespace (at most 8, 200 characters in all).
            include_archived: Search archived sessions too.
            limit: Hits per page (1 to 100).
            offset: The ``next_offset`` of the previous page.

        Raises:
            UsageError: an empty or too long query, a bad limit or offset, or a store that cannot search.
        """
        wanted = SearchQuery(text=query, include_archived=include_archived, limit=limit, offset=offset)
        store = await self.store()
        if not isinstance(store, MessageSearch):
            raise UsageError(f"{type(store).__name__} cannot search messages; use a store that implements it")
        return await store.search_messages(wanted)
