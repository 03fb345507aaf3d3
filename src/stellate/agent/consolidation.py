"""Consolidation: a session's history becomes its memory, on request, on archive, and every N turns.

Scheduled consolidation runs in the background, never blocking a turn, and once per trigger across every
process sharing the store: a claim in the store keeps the other processes off while one works, the due check
is made against the store before the work starts, and turns that arrived meanwhile (on any worker) are caught
up before the claim is let go. A process that dies mid-way leaves its claim to lapse; the session's next turn,
anywhere, schedules the work again. Failures have no caller to raise to and are published as ``error`` events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from stellate import observability
from stellate.agent._locks import KeyedLocks
from stellate.agent.bus import EventBus
from stellate.engine.events import ConsolidationDone, ErrorRaised, MemoryUpdated
from stellate.errors import StellateError
from stellate.session.session import Session
from stellate.store import BaseStore

__all__ = ["CLAIM_TTL", "Consolidator"]

CLAIM_TTL = 300.0
"""Seconds a process may spend on a scheduled consolidation before another may take the work over."""
_CATCH_UP_ROUNDS = 3  # consolidations one claim may run for turns that arrived while it worked


class Consolidator:
    """Consolidates the sessions of one agent.

    Args:
        store: Opens (or returns) the agent's store.
        events: Where memory updates, completions and failures are published.
        owner: Names this agent in the claims it takes.
        every: Consolidate every N user turns in the background (None: only on request and on archive).
    """

    def __init__(
        self, *, store: Callable[[], Awaitable[BaseStore]], events: EventBus, owner: str, every: int | None
    ) -> None:
        self.every = every
        self._store = store
        self._events = events
        self._owner = owner
        self._locks = KeyedLocks()
        self._tasks: set[asyncio.Task[None]] = set()

    @staticmethod
    def has_unconsolidated_turns(session: Session) -> bool:
        """Whether turns ran since the session's last consolidation."""
        return session.history.cursor.last_turn > session.history.consolidated_turn

    def schedule(self, session: Session) -> None:
        """Start a background consolidation if the session is due one (after a turn)."""
        every = self.every
        if every is None or not self._is_due(session, every, session.history.consolidated_turn):
            return
        if self._locks.is_locked(session.id):
            return
        task = asyncio.get_running_loop().create_task(self._once(session, every))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def consolidate(self, session: Session) -> str:
        """Consolidate now and return the new memory; raises what the consolidation raises."""
        async with self._locks.hold(session.id):
            with observability.consolidation_span(session.id) as span:
                memory = await session.consolidate()
                span.record({"stellate.turn": session.history.consolidated_turn})
        await self._events.publish(MemoryUpdated(session_id=session.id, memory=memory))
        await self._events.publish(ConsolidationDone(session_id=session.id, memory=memory))
        return memory

    async def consolidate_reporting(self, session: Session) -> bool:
        """Consolidate now, publishing a failure as an ``error`` event; whether it succeeded."""
        try:
            await self.consolidate(session)
        except Exception as exc:  # background work has no caller to raise to: report it as an event
            code = exc.code if isinstance(exc, StellateError) else "consolidation_failed"
            message = f"{type(exc).__name__}: {exc}"
            await self._events.publish(
                ErrorRaised(session_id=session.id, source="consolidation", code=code, message=message)
            )
            return False
        return True

    async def close(self) -> None:
        """Wait for the background consolidations under way."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _once(self, session: Session, every: int) -> None:
        store = await self._store()
        claim = await store.claim(f"consolidate:{session.id}", owner=self._owner, ttl=CLAIM_TTL)
        if claim is None:  # another process is on it; it catches up on these turns before letting go
            return
        try:
            for _ in range(_CATCH_UP_ROUNDS):
                await session.refresh()  # turns other workers ran belong in the memory too
                done = max(await _consolidated_turn(store, session), session.history.consolidated_turn)
                if not self._is_due(session, every, done) or not await self.consolidate_reporting(session):
                    return
        finally:
            await store.release_claim(claim)

    @staticmethod
    def _is_due(session: Session, every: int, consolidated_turn: int) -> bool:
        return session.history.cursor.last_turn - consolidated_turn >= every


async def _consolidated_turn(store: BaseStore, session: Session) -> int:
    """The turn the session's newest consolidation covered, read from the store (0 when never consolidated)."""
    own = session.record.inherited  # as in the history's fold: a fork does not inherit its source's memory
    puts = await store.read_events(session.id, start=own, types=("memory/put",), reverse=True, limit=50)
    return next((e.data["turn"] for e in puts if "turn" in e.data), 0)
