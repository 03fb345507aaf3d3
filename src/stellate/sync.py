"""A blocking facade over `Agent` for scripts and notebooks.

`SyncAgent` runs one event loop in a background thread for its whole life (an anyio blocking portal)
and hands every call to it, so it works the same in a plain script and inside a notebook whose own loop
is already running: no ``asyncio.run`` per call, no nested loops. It only delegates; the behaviour is
`Agent`'s.

    with SyncAgent("sqlite:///stellate.db", llm=my_llm) as agent:
        root = agent.create_session(label="Trip")
        print(agent.turn(root.id, "Plan a study-abroad year").content)
"""

from __future__ import annotations

import queue
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from stellate.agent.agent import Agent
from stellate.agent.branching import Branched
from stellate.agent.comparison import Comparison
from stellate.agent.images import ImageSource
from stellate.agent.reflector import Reflection
from stellate.agent.replay import Replay
from stellate.agent.searching import SearchPage
from stellate.agent.topology import SessionDigest, TopologyNode
from stellate.agent.usage_report import ContextWindow, UsageReport
from stellate.engine.approval import PendingApproval
from stellate.engine.config import ForkOptions
from stellate.engine.events import TurnEvent, TurnResult
from stellate.log.images import ImageRef
from stellate.log.messages import Message
from stellate.store.blobs import BLOB_GRACE_MS, Blob
from stellate.store.erasure import ErasePlan, Tombstone

__all__ = ["SyncAgent", "iterate_in_portal"]

T = TypeVar("T")
_DONE = object()


def iterate_in_portal(portal: BlockingPortal, start: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    """Iterate, from this thread, over the async iterator ``start()`` running on ``portal``'s loop.

    Stopping early cancels the task that drives it (a turn then records itself as aborted).
    """
    items: queue.Queue[Any] = queue.Queue()

    async def pump() -> None:
        try:
            async for item in start():
                items.put(item)
        except BaseException as exc:  # handed to the reading thread, which raises it
            items.put(exc)
            raise
        finally:
            items.put(_DONE)

    future = portal.start_task_soon(pump)
    try:
        while (item := items.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if not future.done():
            future.cancel()


class SyncAgent:
    """Blocking twin of `Agent`; takes the same arguments. Close it (or use ``with``) when done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        self.agent = Agent(*args, **kwargs)
        """The async agent every call is handed to."""

    def _call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return self._portal.call(fn, *args)

    def close(self) -> None:
        """Close the agent and stop the loop thread; safe to call twice."""
        if self._portal_cm is not None:
            try:
                self._call(self.agent.close)
            finally:
                cm, self._portal_cm = self._portal_cm, None
                cm.__exit__(None, None, None)

    def __enter__(self) -> SyncAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_session(self, **kwargs: Any) -> SessionDigest:
        """See `Agent.create_session`."""
        return self._portal.call(lambda: self.agent.create_session(**kwargs))

    def fork_session(self, source_id: str, options: ForkOptions | None = None, **fields: Any) -> SessionDigest:
        """See `Agent.fork_session`."""
        return self._portal.call(lambda: self.agent.fork_session(source_id, options, **fields))

    def turn(
        self, session_id: str, content: str, *, output_type: Any = None, images: Sequence[ImageSource] = ()
    ) -> TurnResult:
        """See `Agent.turn`."""
        return self._portal.call(lambda: self.agent.turn(session_id, content, output_type=output_type, images=images))

    def stream(
        self, session_id: str, content: str, *, output_type: Any = None, images: Sequence[ImageSource] = ()
    ) -> Iterator[TurnEvent]:
        """See `Agent.stream`; stopping the iteration early cancels the turn (recorded as aborted)."""
        return iterate_in_portal(
            self._portal, lambda: self.agent.stream(session_id, content, output_type=output_type, images=images)
        )

    def list_messages(self, session_id: str) -> list[Message]:
        """See `Agent.list_messages`."""
        return self._call(self.agent.list_messages, session_id)

    def get_session_digest(self, session_id: str) -> SessionDigest:
        """See `Agent.get_session_digest`."""
        return self._call(self.agent.get_session_digest, session_id)

    def list_session_digests(self) -> list[SessionDigest]:
        """See `Agent.list_session_digests`."""
        return self._call(self.agent.list_session_digests)

    def get_topology(self) -> list[TopologyNode]:
        """See `Agent.get_topology`."""
        return self._call(self.agent.get_topology)

    def get_node(self, session_id: str) -> TopologyNode:
        """See `Agent.get_node`."""
        return self._call(self.agent.get_node, session_id)

    def put_memory(self, session_id: str, content: str) -> None:
        """See `Agent.put_memory`."""
        self._call(self.agent.put_memory, session_id, content)

    def put_insight(self, session_id: str, content: str) -> None:
        """See `Agent.put_insight`."""
        self._call(self.agent.put_insight, session_id, content)

    def clear_insight(self, session_id: str) -> None:
        """See `Agent.clear_insight`."""
        self._call(self.agent.clear_insight, session_id)

    def consolidate_session(self, session_id: str) -> str:
        """See `Agent.consolidate_session`."""
        return self._call(self.agent.consolidate_session, session_id)

    def archive_session(self, session_id: str) -> None:
        """See `Agent.archive_session`."""
        self._call(self.agent.archive_session, session_id)

    def reflect(self, *, synthesis_session_id: str | None = None) -> Reflection:
        """See `Agent.reflect`."""
        return self._portal.call(lambda: self.agent.reflect(synthesis_session_id=synthesis_session_id))

    def edit_turn(self, session_id: str, turn: int, content: str, *, label: str | None = None) -> Branched:
        """See `Agent.edit_turn`."""
        return self._portal.call(lambda: self.agent.edit_turn(session_id, turn, content, label=label))

    def regenerate_turn(self, session_id: str, turn: int | None = None, *, label: str | None = None) -> Branched:
        """See `Agent.regenerate_turn`."""
        return self._portal.call(lambda: self.agent.regenerate_turn(session_id, turn, label=label))

    def compare_sessions(self, a_id: str, b_id: str) -> Comparison:
        """See `Agent.compare_sessions`."""
        return self._call(self.agent.compare_sessions, a_id, b_id)

    def replay_session(self, session_id: str, *, from_turn: int, **settings: str | None) -> Replay:
        """See `Agent.replay_session` (``llm``, ``system_prompt``, ``profile``, ``label`` as keywords)."""
        return self._portal.call(lambda: self.agent.replay_session(session_id, from_turn=from_turn, **settings))

    def plan_erase(self, session_id: str, **options: Any) -> ErasePlan:
        """See `Agent.plan_erase` (``subtree``, ``dependents``)."""
        return self._portal.call(lambda: self.agent.plan_erase(session_id, **options))

    def erase_session(self, session_id: str, **options: Any) -> ErasePlan:
        """See `Agent.erase_session` (``subtree``, ``dependents``, ``busy_timeout``, ``by``)."""
        return self._portal.call(lambda: self.agent.erase_session(session_id, **options))

    def erase_space(self, **options: Any) -> ErasePlan:
        """See `Agent.erase_space` (``busy_timeout``, ``by``)."""
        return self._portal.call(lambda: self.agent.erase_space(**options))

    def prune_sessions(self, older_than: float, **options: Any) -> ErasePlan:
        """See `Agent.prune_sessions` (``dry_run``, ``busy_timeout``, ``by``)."""
        return self._portal.call(lambda: self.agent.prune_sessions(older_than, **options))

    def list_tombstones(self) -> list[Tombstone]:
        """See `Agent.list_tombstones`."""
        return self._call(self.agent.list_tombstones)

    def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """Blocking `Agent.pending_approvals`."""
        return self._portal.call(lambda: self.agent.pending_approvals(session_id))

    def approve(
        self, session_id: str, call_id: str, *, arguments: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """Blocking `Agent.approve`."""
        return self._portal.call(lambda: self.agent.approve(session_id, call_id, arguments=arguments, by=by))

    def deny(self, session_id: str, call_id: str, *, reason: str | None = None, by: str = "user") -> TurnResult | None:
        """Blocking `Agent.deny`."""
        return self._portal.call(lambda: self.agent.deny(session_id, call_id, reason=reason, by=by))

    def expire_approvals(self) -> int:
        """Blocking `Agent.expire_approvals`."""
        return self._call(self.agent.expire_approvals)

    def search(self, query: str, *, include_archived: bool = False, limit: int = 20, offset: int = 0) -> SearchPage:
        """Blocking `Agent.search`."""
        return self._portal.call(
            lambda: self.agent.search(query, include_archived=include_archived, limit=limit, offset=offset)
        )

    def usage_report(self, session_id: str) -> UsageReport:
        """See `Agent.usage_report`."""
        return self._call(self.agent.usage_report, session_id)

    def context_window(self, session_id: str, reply_seq: int | None = None) -> ContextWindow:
        """See `Agent.context_window`."""
        return self._call(self.agent.context_window, session_id, reply_seq)

    def put_image(self, source: ImageSource) -> ImageRef:
        """See `Agent.put_image`."""
        return self._call(self.agent.put_image, source)

    def get_image(self, sha256: str) -> Blob:
        """See `Agent.get_image`."""
        return self._call(self.agent.get_image, sha256)

    def delete_unreferenced_images(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """See `Agent.delete_unreferenced_images`."""
        return self._portal.call(lambda: self.agent.delete_unreferenced_images(grace_ms=grace_ms))
