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

__all__ = ["KeyedLocks", "SessionLocks"]

_HELD: ContextVar[frozenset[str]] = ContextVar("stellate_held_sessions", default=frozenset())


class KeyedLocks:
    """One asyncio lock per key, kept only while a task holds or waits for it: bounded by the tasks, not the keys."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        """Key -> (its lock, [how many tasks hold or wait for it])."""

    def __len__(self) -> int:
        return len(self._locks)

    def is_locked(self, key: str) -> bool:
        """Whether a task holds the key's lock."""
        entry = self._locks.get(key)
        return entry is not None and entry[0].locked()

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold the key's lock (waiting for it); the last task to let go of a key forgets its lock."""
        lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[key]


class SessionLocks:
    """One asyncio lock per session id; different sessions never wait for each other."""

    def __init__(self) -> None:
        self._locks = KeyedLocks()

    def __len__(self) -> int:
        return len(self._locks)

    def is_held_here(self, session_id: str) -> bool:
        """Whether the current task (or the turn that spawned it) holds the session's lock."""
        return session_id in _HELD.get()

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's lock; re-entering from the holder's own tasks does not wait."""
        if self.is_held_here(session_id):
            yield
            return
        async with self._locks.hold(session_id):
            token = _HELD.set(_HELD.get() | {session_id})
            try:
                yield
            finally:
                with contextlib.suppress(ValueError):  # an async generator closed from another context
                    _HELD.reset(token)
