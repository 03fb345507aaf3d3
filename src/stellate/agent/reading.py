"""What `Agent` offers to read a forest and to write a session's slots (memory, insight, label).

A base class of `Agent`, so the agent's module keeps to its lifecycle, turns and forks.
"""

from __future__ import annotations

import dataclasses

from stellate.agent.approvals import with_approvals
from stellate.agent.parts import AgentParts
from stellate.agent.topology import SessionDigest, TopologyNode, build_forest, digest_of
from stellate.engine.events import InsightUpdated, MemoryUpdated
from stellate.log.messages import Message
from stellate.store import SessionId

__all__ = ["AgentReads"]


class AgentReads(AgentParts):
    """Reading and slot writes; `Agent` provides the store, the session cache and the locks."""

    # -- reading ---------------------------------------------------------------------------------

    async def list_messages(self, session_id: str) -> list[Message]:
        """The session's transcript as its model sees it (summary first when compressed)."""
        return await (await self._session(session_id)).messages()

    async def get_session_digest(self, session_id: str) -> SessionDigest:
        """One session's digest.

        Raises:
            NotFoundError: unknown id.
        """
        record = await (await self.store()).get_session(SessionId(session_id))
        return dataclasses.replace(digest_of(record), awaiting_approval=len(record.cursor.awaiting))

    async def list_session_digests(self) -> list[SessionDigest]:
        """Digests of every session, in creation order (one query, and one read per session with an open turn)."""
        store = await self.store()
        return await with_approvals(store, await store.list_digests())

    async def list_session_digests_page(
        self,
        *,
        after: str | None = None,
        limit: int = 100,
        parent_id: str | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """Up to ``limit`` digests in creation order after the session ``after`` (see `Store.list_digests_page`).

        Raises:
            UsageError: ``bad_cursor`` when ``after`` names no session of the store (erased, or never one).
        """
        store = await self.store()
        page = await store.list_digests_page(
            after=SessionId(after) if after is not None else None,
            limit=limit,
            parent_id=SessionId(parent_id) if parent_id is not None else None,
            status=status,
        )
        return await with_approvals(store, page) if any(d.turn_open for d in page) else page

    async def get_topology_page(self, *, after: str | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A page of the forest: up to ``limit`` nodes in creation order after ``after``, without their children.

        A parent is listed before its children, so `stellate.agent.topology.forest_of` over the pages in turn
        gives `get_topology`.

        Raises:
            UsageError: ``bad_cursor`` when ``after`` names no session of the store.
        """
        store = await self.store()
        return await store.list_nodes_page(after=SessionId(after) if after is not None else None, limit=limit)

    async def get_topology(self) -> list[TopologyNode]:
        """The forest: roots in creation order, each with its subtree."""
        return build_forest(await (await self.store()).list_sessions())

    async def get_node(self, session_id: str) -> TopologyNode:
        """One session's node with its subtree."""
        store = await self.store()
        root = await store.get_session(SessionId(session_id))
        subtree = await store.subtree(root.id)
        [node] = [n for n in build_forest(subtree) if n.id == session_id]
        node.parent_id = root.parent_id
        return node

    # -- slots -----------------------------------------------------------------------------------

    async def put_memory(self, session_id: str, content: str) -> None:
        """Replace a session's memory."""
        await (await self._session(session_id)).put_memory(content)
        await self.events.publish(MemoryUpdated(session_id=session_id, memory=content))

    async def put_insight(self, session_id: str, content: str) -> None:
        """Replace a session's pending insight; its next successful model call consumes it."""
        await (await self._session(session_id)).put_insight(content)
        await self.events.publish(InsightUpdated(session_id=session_id, insight=content))

    async def clear_insight(self, session_id: str) -> None:
        """Drop a session's pending insight."""
        await (await self._session(session_id)).clear_insight()
        await self.events.publish(InsightUpdated(session_id=session_id, insight=None))

    async def rename_session(self, session_id: str, label: str) -> None:
        """Give a session a new label; the identity line of its next model call follows."""
        await (await self._session(session_id)).set_label(label)

    async def consolidate_session(self, session_id: str) -> str:
        """Consolidate a session's history into its memory now and return the memory."""
        async with self._locks.hold(session_id):
            session = await self._session(session_id)
            memory = await self._consolidator.consolidate(session)
        return memory
