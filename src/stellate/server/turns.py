"""Turns owned by the server: each runs in its own task, and HTTP responses only watch it.

A client that disconnects stops watching; the turn goes on and lands in the log. Only an explicit cancel
(or the server's shutdown, after a grace period) aborts it, and the turn then records ``turn/end
{aborted}`` itself. One turn per session at a time in this process: a second one is refused with
``session_busy`` (or waits, when the client asks).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from stellate.agent import Agent
from stellate.engine.events import (
    ToolCallFinished,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnResult,
)
from stellate.errors import ConflictError
from stellate.log.images import ImageRef

__all__ = ["LiveTurn", "TurnManager", "event_data"]


_FLAT = (str, int, float, bool, type(None))
_FIELDS: dict[type, tuple[str, ...]] = {}


def event_data(event: Any) -> dict[str, Any]:
    """An agent event (a dataclass) as JSON data, as `dataclasses.asdict` makes it.

    Without its deep copy when every field is a plain value: a text chunk is made once per chunk, on the hot
    path of every stream.
    """
    cls = type(event)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(event))
    values = [getattr(event, name) for name in names]
    if all(type(value) in _FLAT for value in values):
        return dict(zip(names, values, strict=True))
    data: dict[str, Any] = dataclasses.asdict(event)
    return data


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class LiveTurn:
    """One running (or just finished) turn and everything it has streamed so far.

    Watchers wait on futures the turn resolves when it records an event or ends (no lock: one event loop), and
    each event is made JSON once, by its first watcher, for every watcher (`json_of`).
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.events: list[tuple[TurnEvent, float | None]] = []
        """Each event with its duration in ms (tool results only); made JSON only for those who watch."""
        self.arrived: list[float] = []
        """When each event was recorded (event-loop time)."""
        self.result: TurnResult | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self._ended = False
        self._waiters: list[asyncio.Future[None]] = []
        self._end_waiters: list[asyncio.Future[None]] = []
        self._hooked = False
        self._json: list[str | None] = []
        self._started_at: dict[str, float] = {}

    @property
    def done(self) -> bool:
        """Whether the turn has ended (completed, failed or aborted)."""
        return self._ended or (self.task is not None and self.task.done())

    async def run(
        self, agent: Agent, content: str, busy_timeout: float | None, images: Sequence[ImageRef] = ()
    ) -> None:
        """Drive the turn to its end, recording every event."""
        await self.drive(agent.stream(self.session_id, content, busy_timeout=busy_timeout, images=images))

    async def drive(self, events: AsyncIterator[TurnEvent]) -> None:
        """Drive any stream of a turn's events (a new turn, or one resumed by an approval) to its end."""
        try:
            async for event in events:
                self._record(event)
        except asyncio.CancelledError:
            self.error = asyncio.CancelledError()
            raise
        except Exception as exc:  # handed to the watchers, which report it as a problem (the agent publishes it)
            self.error = exc
        finally:
            self._ended = True
            self._wake()

    def _record(self, event: TurnEvent) -> None:
        duration = None
        if isinstance(event, ToolCallStarted):
            self._started_at[event.call.id] = time.monotonic()
        elif isinstance(event, ToolCallFinished):
            started = self._started_at.pop(event.call.id, None)
            duration = round((time.monotonic() - started) * 1000, 3) if started is not None else None
        elif isinstance(event, TurnFinished):
            self.result = event.result
        self.events.append((event, duration))
        self.arrived.append(asyncio.get_running_loop().time())
        self._json.append(None)
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        if self.done:
            waiters += self._end_waiters
            self._end_waiters = []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def changed(self, seen: int) -> None:
        """Return once the turn has more than ``seen`` events or has ended (or, rarely, at a spurious wake)."""
        if len(self.events) <= seen and not self.done:
            await self._wait(self._waiters)

    async def finished(self) -> None:
        """Return once the turn has ended (not at each event)."""
        while not self.done:
            await self._wait(self._end_waiters)

    async def pause(self, seconds: float) -> None:
        """Return after ``seconds``, or when the turn ends if sooner (cheaper than a timeout: no cancellation)."""
        if self.done:
            return
        waiter = asyncio.get_running_loop().create_future()
        timer = asyncio.get_running_loop().call_later(seconds, _resolve, waiter)
        self._end_waiters.append(waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            with contextlib.suppress(ValueError):  # woken by its timer: not by the end, which would clear the list
                self._end_waiters.remove(waiter)

    async def _wait(self, waiters: list[asyncio.Future[None]]) -> None:
        if not self._hooked and self.task is not None:  # a task cancelled before it ran never reaches `drive`
            self._hooked = True
            self.task.add_done_callback(self._task_done)
        waiter = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        await waiter

    def _task_done(self, _: object) -> None:
        self._wake()

    def data(self, index: int) -> dict[str, Any]:
        """Event ``index`` as JSON data (with ``duration_ms`` for a tool result)."""
        event, duration = self.events[index]
        data = event_data(event)
        if isinstance(event, ToolCallFinished):
            data["duration_ms"] = duration
        return data

    def json_of(self, index: int) -> str:
        """Event ``index`` as compact JSON text, made once for every watcher."""
        text = self._json[index]
        if text is None:
            text = self._json[index] = json.dumps(self.data(index), separators=(",", ":"), ensure_ascii=False)
        return text

    async def watch(self) -> AsyncIterator[dict[str, Any]]:
        """Every event of the turn (as JSON data) from its start, then new ones as they come, until it ends."""
        index = 0
        while True:
            await self.changed(index)
            end = len(self.events)
            for fresh in range(index, end):
                yield self.data(fresh)
            index = end
            if self.done and index >= len(self.events):
                return

    async def outcome(self) -> TurnResult:
        """Wait for the end of the turn (without cancelling it if the caller goes away) and return its result.

        Raises:
            StellateError: what the turn raised.
            ConflictError: ``turn_cancelled`` when the turn was cancelled.
        """
        result = await self.settled()
        assert result is not None
        return result

    async def settled(self) -> TurnResult | None:
        """Like `outcome`, for a stream that may end without a turn (a decision while other calls still wait)."""
        assert self.task is not None
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.task)
        if self.task.cancelled() or isinstance(self.error, asyncio.CancelledError):
            raise ConflictError("the turn was cancelled", code="turn_cancelled", session_id=self.session_id)
        if self.error is not None:
            raise self.error
        return self.result


class TurnManager:
    """The turns this server process runs, by (space, session id)."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], LiveTurn] = {}

    def current(self, space: str, session_id: str) -> LiveTurn | None:
        """The running turn of a session, if any."""
        live = self._turns.get((space, session_id))
        return live if live is not None and not live.done else None

    async def start(
        self,
        space: str,
        agent: Agent,
        session_id: str,
        content: str,
        *,
        wait: bool = False,
        images: Sequence[ImageRef] = (),
    ) -> LiveTurn:
        """Start a turn in its own task.

        Without ``wait``, a session busy in this process is refused at once, and one busy in another process
        (its lease is held) fails the turn with ``session_busy`` at once too; with ``wait`` both are waited
        for (the other process for up to the agent's ``busy_timeout``).

        Raises:
            ConflictError: ``session_busy`` when the session already runs a turn here (unless ``wait``).
            NotFoundError: unknown session (checked before the task starts).
        """
        await agent.get_session_digest(session_id)
        running = self.current(space, session_id)
        while running is not None:
            if not wait:
                raise ConflictError(
                    f"session {session_id} is running a turn; retry when it ends",
                    code="session_busy",
                    session_id=session_id,
                    holder="this server",
                )
            assert running.task is not None
            with contextlib.suppress(BaseException):
                await asyncio.shield(running.task)
            running = self.current(space, session_id)
        live = LiveTurn(session_id)
        live.task = asyncio.get_running_loop().create_task(live.run(agent, content, None if wait else 0.0, images))
        self._turns[(space, session_id)] = live
        live.task.add_done_callback(lambda _: self._forget(space, session_id, live))
        return live

    def start_events(self, space: str, session_id: str, events: AsyncIterator[TurnEvent]) -> LiveTurn:
        """Drive ``events`` (a decision and the turn it resumes) in a task, watched like a turn.

        Raises:
            ConflictError: ``session_busy`` when the session already runs a turn here.
        """
        if self.current(space, session_id) is not None:
            raise ConflictError(
                f"session {session_id} is running a turn; retry when it ends",
                code="session_busy",
                session_id=session_id,
                holder="this server",
            )
        live = LiveTurn(session_id)
        live.task = asyncio.get_running_loop().create_task(live.drive(events))
        self._turns[(space, session_id)] = live
        live.task.add_done_callback(lambda _: self._forget(space, session_id, live))
        return live

    def _forget(self, space: str, session_id: str, live: LiveTurn) -> None:
        if self._turns.get((space, session_id)) is live:
            del self._turns[(space, session_id)]

    def cancel(self, space: str, session_id: str) -> bool:
        """Abort the running turn of a session; False when none runs."""
        live = self.current(space, session_id)
        if live is None or live.task is None:
            return False
        live.task.cancel()
        return True

    def running(self, space: str | None = None) -> list[LiveTurn]:
        """Every turn still running (of ``space`` only, if given)."""
        return [live for (where, _), live in self._turns.items() if not live.done and space in (None, where)]

    async def shutdown(self, grace: float) -> None:
        """Let running turns finish for ``grace`` seconds, then abort the rest (each records its end)."""
        tasks = [live.task for live in self.running() if live.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
