"""`SyncClient`: the blocking twin of `Client`, delegating to it on one loop thread (as `stellate.sync` does)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from stellate.agent import Reflection, SearchPage, SessionDigest, TopologyNode
from stellate.agent.branching import Branched
from stellate.agent.comparison import Comparison
from stellate.agent.context_window import ContextWindow
from stellate.agent.images import ImageSource
from stellate.agent.replay import Replay
from stellate.agent.usage_report import UsageReport
from stellate.client.remote import Client
from stellate.engine import ForkOptions, PendingApproval
from stellate.engine.events import TurnEvent, TurnResult
from stellate.log.images import ImageRef
from stellate.log.messages import Message
from stellate.store.erasure import ErasePlan, Tombstone
from stellate.sync import iterate_in_portal

__all__ = ["SyncClient"]

T = TypeVar("T")


class SyncClient:
    """Blocking twin of `Client`; takes the same arguments. Close it (or use ``with``) when done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        self.client: Client = self._portal.call(lambda: _make(*args, **kwargs))
        """The async client every call is handed to."""

    def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        return self._portal.call(fn)

    def close(self) -> None:
        """Close the connections and stop the loop thread; safe to call twice."""
        if self._portal_cm is not None:
            try:
                self._call(self.client.close)
            finally:
                cm, self._portal_cm = self._portal_cm, None
                cm.__exit__(None, None, None)

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_session(self, **kwargs: Any) -> SessionDigest:
        """See `Agent.create_session`."""
        return self._call(lambda: self.client.create_session(**kwargs))

    def set_system_prompt(self, session_id: str, content: str) -> None:
        """See `Client.set_system_prompt`."""
        self._call(lambda: self.client.set_system_prompt(session_id, content))

    def fork_session(self, source_id: str, options: ForkOptions | None = None, **fields: Any) -> SessionDigest:
        """See `Agent.fork_session`."""
        return self._call(lambda: self.client.fork_session(source_id, options, **fields))

    def turn(self, session_id: str, content: str, *, images: Sequence[ImageSource] = ()) -> TurnResult:
        """See `Agent.turn`."""
        return self._call(lambda: self.client.turn(session_id, content, images=images))

    def stream(self, session_id: str, content: str, *, images: Sequence[ImageSource] = ()) -> Iterator[TurnEvent]:
        """See `Agent.stream`."""
        return iterate_in_portal(self._portal, lambda: self.client.stream(session_id, content, images=images))

    def cancel_turn(self, session_id: str) -> bool:
        """See `Client.cancel_turn`."""
        return self._call(lambda: self.client.cancel_turn(session_id))

    def list_messages(self, session_id: str) -> list[Message]:
        """See `Agent.list_messages`."""
        return self._call(lambda: self.client.list_messages(session_id))

    def get_session_digest(self, session_id: str) -> SessionDigest:
        """See `Agent.get_session_digest`."""
        return self._call(lambda: self.client.get_session_digest(session_id))

    def list_session_digests(self) -> list[SessionDigest]:
        """See `Agent.list_session_digests`."""
        return self._call(self.client.list_session_digests)

    def get_topology(self) -> list[TopologyNode]:
        """See `Agent.get_topology`."""
        return self._call(self.client.get_topology)

    def put_memory(self, session_id: str, content: str) -> None:
        """See `Agent.put_memory`."""
        self._call(lambda: self.client.put_memory(session_id, content))

    def put_insight(self, session_id: str, content: str) -> None:
        """See `Agent.put_insight`."""
        self._call(lambda: self.client.put_insight(session_id, content))

    def clear_insight(self, session_id: str) -> None:
        """See `Agent.clear_insight`."""
        self._call(lambda: self.client.clear_insight(session_id))

    def consolidate_session(self, session_id: str) -> str:
        """See `Agent.consolidate_session`."""
        return self._call(lambda: self.client.consolidate_session(session_id))

    def archive_session(self, session_id: str) -> None:
        """See `Agent.archive_session`."""
        self._call(lambda: self.client.archive_session(session_id))

    def reflect(self, *, synthesis_session_id: str | None = None) -> Reflection:
        """See `Agent.reflect`."""
        return self._call(lambda: self.client.reflect(synthesis_session_id=synthesis_session_id))

    def edit_turn(self, session_id: str, turn: int, content: str, *, label: str | None = None) -> Branched:
        """See `Agent.edit_turn`."""
        return self._call(lambda: self.client.edit_turn(session_id, turn, content, label=label))

    def regenerate_turn(self, session_id: str, turn: int | None = None, *, label: str | None = None) -> Branched:
        """See `Agent.regenerate_turn`."""
        return self._call(lambda: self.client.regenerate_turn(session_id, turn, label=label))

    def compare_sessions(self, a_id: str, b_id: str) -> Comparison:
        """See `Agent.compare_sessions`."""
        return self._call(lambda: self.client.compare_sessions(a_id, b_id))

    def replay_session(self, session_id: str, *, from_turn: int, **settings: str | None) -> Replay:
        """See `Agent.replay_session`."""
        return self._call(lambda: self.client.replay_session(session_id, from_turn=from_turn, **settings))

    def plan_erase(self, session_id: str, **options: Any) -> ErasePlan:
        """See `Agent.plan_erase` (``subtree``, ``dependents``)."""
        return self._call(lambda: self.client.plan_erase(session_id, **options))

    def erase_session(self, session_id: str, **options: Any) -> ErasePlan:
        """See `Agent.erase_session` (``subtree``, ``dependents``, ``busy_timeout``)."""
        return self._call(lambda: self.client.erase_session(session_id, **options))

    def erase_space(self, **options: Any) -> ErasePlan:
        """See `Agent.erase_space` (``busy_timeout``)."""
        return self._call(lambda: self.client.erase_space(**options))

    def prune_sessions(self, older_than: float, **options: Any) -> ErasePlan:
        """See `Agent.prune_sessions` (``dry_run``)."""
        return self._call(lambda: self.client.prune_sessions(older_than, **options))

    def list_tombstones(self) -> list[Tombstone]:
        """See `Agent.list_tombstones`."""
        return self._call(self.client.list_tombstones)

    def capabilities(self) -> dict[str, Any]:
        """See `Client.capabilities`."""
        return self._call(self.client.capabilities)

    def pending_approvals(self, session_id: str | None = None) -> list[PendingApproval]:
        """See `Agent.pending_approvals`."""
        return self._call(lambda: self.client.pending_approvals(session_id))

    def approve(
        self, session_id: str, call_id: str, *, arguments: str | None = None, by: str = "user"
    ) -> TurnResult | None:
        """See `Agent.approve`."""
        return self._call(lambda: self.client.approve(session_id, call_id, arguments=arguments, by=by))

    def deny(self, session_id: str, call_id: str, *, reason: str | None = None, by: str = "user") -> TurnResult | None:
        """See `Agent.deny`."""
        return self._call(lambda: self.client.deny(session_id, call_id, reason=reason, by=by))

    def search(self, query: str, *, include_archived: bool = False, limit: int = 20, offset: int = 0) -> SearchPage:
        """See `Agent.search`."""
        return self._call(
            lambda: self.client.search(query, include_archived=include_archived, limit=limit, offset=offset)
        )

    def usage_report(self, session_id: str) -> UsageReport:
        """See `Client.usage_report`."""
        return self._call(lambda: self.client.usage_report(session_id))

    def context_window(self, session_id: str, reply_seq: int | None = None) -> ContextWindow:
        """See `Client.context_window`."""
        return self._call(lambda: self.client.context_window(session_id, reply_seq))

    def put_image(self, source: ImageSource) -> ImageRef:
        """See `Client.put_image`."""
        return self._call(lambda: self.client.put_image(source))

    def get_image(self, sha256: str) -> bytes:
        """See `Client.get_image`."""
        return self._call(lambda: self.client.get_image(sha256))


async def _make(*args: Any, **kwargs: Any) -> Client:
    return Client(*args, **kwargs)
