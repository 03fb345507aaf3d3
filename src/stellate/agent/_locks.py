"""Per-session write serialization that a turn's own tools can re-enter.

A turn holds its session's lock while it runs. A fork requested by a tool inside that turn (the model
calling ``create_session``) runs in a task spawned by the turn, which inherits the context variable
naming the sessions the turn holds, so it passes straight through instead of waiting for the turn to end
(the reference system deadlocks there).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar

__all__ = ["SessionLocks"]

_HELD: ContextVar[frozenset[str]] = ContextVar("stellate_held_sessions", default=frozenset())


class SessionLocks:
    """One asyncio lock per session id; different sessions never wait for each other."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def is_held_here(self, session_id: str) -> bool:
        """Whether the current task (or the turn that spawned it) holds the session's lock."""
        return session_id in _HELD.get()

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's lock; re-entering from the holder's own tasks does not wait."""
        if self.is_held_here(session_id):
            yield
            return
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            token = _HELD.set(_HELD.get() | {session_id})
            try:
                yield
            finally:
                with contextlib.suppress(ValueError):  # an async generator closed from another context
                    _HELD.reset(token)
