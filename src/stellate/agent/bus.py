"""One event stream for hooks and subscribers (DESIGN.md §5).

Hooks are called in registration order; one that fails is reported as an `ErrorRaised` event and never
breaks the turn that published. Subscribers get their own bounded queue; a subscriber that falls behind
loses its oldest events rather than slowing everyone down.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass

from stellate.engine.events import AgentEvent, ErrorRaised

__all__ = ["EventBus", "Hook"]

Hook = Callable[[AgentEvent], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class _HookEntry:
    hook: Hook
    types: frozenset[str] | None


class EventBus:
    """Publishes agent events to hooks and subscribers."""

    def __init__(self, *, queue_size: int = 1000) -> None:
        self._hooks: list[_HookEntry] = []
        self._queues: list[tuple[asyncio.Queue[AgentEvent], frozenset[str] | None]] = []
        self._queue_size = queue_size

    def add_hook(self, hook: Hook, *, types: Collection[str] | None = None) -> Callable[[], None]:
        """Call ``hook`` for every event (or only those of ``types``); returns a function that removes it."""
        entry = _HookEntry(hook, frozenset(types) if types is not None else None)
        self._hooks.append(entry)
        return lambda: self._hooks.remove(entry) if entry in self._hooks else None

    async def publish(self, event: AgentEvent) -> None:
        """Deliver ``event`` to subscribers, then to hooks."""
        await self.publish_remote(event)
        for entry in list(self._hooks):
            if entry.types is None or event.type in entry.types:
                await self._call(entry.hook, event)

    async def publish_remote(self, event: AgentEvent) -> None:
        """Deliver an event another process published to subscribers only (its hooks ran where it happened)."""
        for queue, types in list(self._queues):
            if types is None or event.type in types:
                if queue.full():
                    queue.get_nowait()
                queue.put_nowait(event)

    async def _call(self, hook: Hook, event: AgentEvent) -> None:
        try:
            outcome = hook(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception as exc:  # a broken hook must not break the turn that published
            if isinstance(event, ErrorRaised) and event.source == "hook":
                return
            failure = ErrorRaised(
                session_id=getattr(event, "session_id", None),
                source="hook",
                code="hook_failed",
                message=f"{type(exc).__name__}: {exc}",
                details={"event": event.type},
            )
            await self.publish(failure)

    async def subscribe(self, types: Collection[str] | None = None) -> AsyncIterator[AgentEvent]:
        """Yield events published from now on (only those of ``types`` if given) until the caller stops."""
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue(self._queue_size)
        entry = (queue, frozenset(types) if types is not None else None)
        self._queues.append(entry)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.remove(entry)
