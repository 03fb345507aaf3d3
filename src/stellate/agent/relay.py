"""Agent events leaving the process: into the store's event history, and to the agents of other workers.

The relay takes each event this agent publishes into an outbox, and a sender writes what waits there in
order, batched (the events waiting when the sender wakes go together, consecutive text chunks of one
session merged):

- with `EventRelay.record_history`, every event but text chunks goes into the store's event history
  (`stellate.store.history`), which ``/v1/events`` serves and resumes from on any worker. A store that
  cannot be reached is retried with backoff, in order, so an outage delays the history but loses nothing;
- with `EventRelay.share`, every event goes on the store's ``events`` signal channel, and the events of other
  agents on the same store and space reach this agent's subscribers. Remote events never reach hooks (a
  hook's side effects belong to the process that ran the work) and are never sent on again.

The history is written before the events of the same batch are signalled, so a worker hears of an event's
history row before any text chunk that followed it. Signals only wake and inform: what is committed is in
the log, which subscribers of a session reread from their last seq. Text chunks of a running turn exist only
in signals.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Annotated

from pydantic import Field, TypeAdapter, ValidationError

from stellate.agent.bus import EventBus
from stellate.engine.events import AgentEvent, TextChunk
from stellate.errors import is_unavailable
from stellate.store import BaseStore
from stellate.store.history import EventHistory, NewHistoryEntry
from stellate.store.signals import RESYNC, Reassembler, Subscription, fragments

__all__ = ["EVENTS_CHANNEL", "NOT_KEPT", "EventRelay"]

EVENTS_CHANNEL = "events"
NOT_KEPT = frozenset({"text"})
"""Event types the history does not keep: text chunks (the log holds the reply they add up to)."""
_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(Annotated[AgentEvent, Field(discriminator="type")])
_BACKOFF = (0.1, 0.25, 0.5, 1.0, 2.0)
_log = logging.getLogger(__name__)


class EventRelay:
    """Connects an agent's event bus to the store's event history and to the other processes sharing its store."""

    def __init__(self, *, owner: str, store: Callable[[], Awaitable[BaseStore]], bus: EventBus) -> None:
        self._owner = owner
        self._store = store
        self._bus = bus
        self._outbox: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._receiver: asyncio.Task[None] | None = None
        self._started = asyncio.Lock()
        self._sharing = self._recording = False
        self._queued = self._handled = 0
        self._progress = asyncio.Condition()
        self._last_kept: int | None = None
        self._texts = TextFeed()

    async def texts(self) -> AsyncIterator[tuple[int | None, TextChunk]]:
        """Text chunks of this agent's turns and (when sharing) of other processes' agents, until the caller stops.

        Each comes with the history id of the newest kept event published before it (None if there is none):
        a stream that sends history rows and text chunks sends the rows up to that id first. This agent's
        chunks come once the history rows before them are written.
        """
        await self.start_receiving()
        async for item in self._texts.subscribe():
            yield item

    def share(self) -> None:
        """Send this agent's events to the other processes, and take theirs (see `start_receiving`)."""
        self._sharing = True

    def record_history(self) -> None:
        """Write this agent's events (all but `NOT_KEPT`) into the store's event history from now on."""
        self._recording = True

    def send(self, event: AgentEvent) -> None:
        """Queue an event of this agent (the hook the agent registers)."""
        self._outbox.put_nowait(event)
        self._queued += 1
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_forever(), name="stellate relay out")

    async def flushed(self) -> None:
        """Return once every event queued before the call is in the history (or given up on) and signalled."""
        target = self._queued
        async with self._progress:
            await self._progress.wait_for(lambda: self._handled >= target or self._sender is None)

    async def start_receiving(self) -> None:
        """Listen for other processes' events (once, on the first subscriber; only when sharing)."""
        async with self._started:
            if self._receiver is None and self._sharing:
                store = await self._store()
                subscription = await store.signals.subscribe([EVENTS_CHANNEL])
                self._receiver = asyncio.get_running_loop().create_task(
                    self._receive_forever(store, subscription), name="stellate relay in"
                )

    async def close(self, *, timeout: float = 5.0) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then stop."""
        sender, receiver, self._sender, self._receiver = self._sender, self._receiver, None, None
        if sender is not None:
            # A stop mark rather than a cancel: a cancel landing inside the database driver may be swallowed there.
            self._outbox.put_nowait(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(sender), timeout)
        for task in (sender, receiver):
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait([task])
        async with self._progress:
            self._progress.notify_all()  # nothing more is handled: release whoever waits in `flushed`

    async def _send_forever(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            stop = None in batch
            events = [event for event in batch if event is not None]
            if events:
                merged = _merge_text(events)
                marks = self._marks(merged, await self._record(merged) if self._recording else [])
                self._texts.deliver(
                    (mark, event) for event, mark in zip(merged, marks, strict=True) if isinstance(event, TextChunk)
                )
                if self._sharing:
                    await self._publish(merged, marks)
            async with self._progress:
                self._handled += len(events)
                self._progress.notify_all()
            if stop:
                return

    def _marks(self, batch: list[AgentEvent], ids: list[int]) -> list[int | None]:
        """For each event, the history id of the newest kept event at or before it (its own, if it is kept)."""
        kept = iter(ids)
        marks: list[int | None] = []
        for event in batch:
            if event.type not in NOT_KEPT:
                self._last_kept = next(kept, self._last_kept)
            marks.append(self._last_kept)
        return marks

    async def _record(self, batch: list[AgentEvent]) -> list[int]:
        """Write the batch's kept events into the history (their ids back); retry while the store is unavailable."""
        entries = [
            NewHistoryEntry(kind=e.type, data=json.dumps(_EVENT.dump_python(e, mode="json"), separators=(",", ":")))
            for e in batch
            if e.type not in NOT_KEPT
        ]
        for attempt in itertools.count():
            try:
                store = await self._store()
                if entries and isinstance(store, EventHistory):
                    return [entry.id for entry in await store.append_history(entries)]
                return []
            except Exception as exc:
                if not is_unavailable(exc):
                    _log.warning("could not keep %d agent event(s) in the event history: %s", len(entries), exc)
                    return []
                if attempt == 0:
                    _log.warning("the store is unavailable; keeping %d event(s) for the history: %s", len(entries), exc)
                await asyncio.sleep(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
        return []  # pragma: no cover - the loop above only ends by returning

    async def _publish(self, batch: list[AgentEvent], marks: list[int | None]) -> None:
        try:
            store = await self._store()
            envelopes = [self._envelope(store, event, mark) for event, mark in zip(batch, marks, strict=True)]
            payloads = [p for envelope in envelopes for p in fragments(envelope)]
            await store.signals.publish(EVENTS_CHANNEL, payloads)
        except Exception as exc:  # the relay is best effort: the log holds everything committed
            _log.warning("could not relay %d agent event(s) to other processes: %s", len(batch), exc)

    def _envelope(self, store: BaseStore, event: AgentEvent, mark: int | None) -> str:
        body = _EVENT.dump_python(event, mode="json")
        envelope = {"origin": self._owner, "space": _space(store), "event": body, "after": mark}
        return json.dumps(envelope, separators=(",", ":"))

    async def _receive_forever(self, store: BaseStore, subscription: Subscription) -> None:
        joiner = Reassembler()
        with subscription:
            async for _, payload in subscription:
                message = joiner.add(payload) if payload != RESYNC else None
                remote = self._remote_event(store, message) if message is not None else None
                if remote is not None:
                    event, mark = remote
                    if isinstance(event, TextChunk):
                        self._texts.deliver([(mark, event)])
                    await self._bus.publish_remote(event)

    def _remote_event(self, store: BaseStore, message: str) -> tuple[AgentEvent, int | None] | None:
        try:
            envelope = json.loads(message)
            if envelope["origin"] == self._owner or envelope["space"] != _space(store):
                return None
            mark = envelope.get("after")
            return _EVENT.validate_python(envelope["event"]), mark if isinstance(mark, int) else None
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            _log.warning("ignored a malformed relayed event: %s", exc)
            return None


class TextFeed:
    """Hands ``(mark, text chunk)`` pairs to every subscriber's bounded queue (the oldest go when one lags)."""

    def __init__(self, *, queue_size: int = 1000) -> None:
        self._queues: set[asyncio.Queue[tuple[int | None, TextChunk]]] = set()
        self._queue_size = queue_size

    def deliver(self, items: Iterable[tuple[int | None, TextChunk]]) -> None:
        """Queue each item for every subscriber."""
        for item in items:
            for queue in self._queues:
                if queue.full():
                    queue.get_nowait()
                queue.put_nowait(item)

    async def subscribe(self) -> AsyncIterator[tuple[int | None, TextChunk]]:
        """Yield the items delivered from now on."""
        queue: asyncio.Queue[tuple[int | None, TextChunk]] = asyncio.Queue(self._queue_size)
        self._queues.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)


def _space(store: BaseStore) -> str:
    return str(getattr(store, "space", ""))


def _merge_text(events: list[AgentEvent]) -> list[AgentEvent]:
    """Consecutive text chunks of one session become one chunk; everything else keeps its place."""
    merged: list[AgentEvent] = []
    for event in events:
        last = merged[-1] if merged else None
        if isinstance(event, TextChunk) and isinstance(last, TextChunk) and last.session_id == event.session_id:
            merged[-1] = TextChunk(session_id=event.session_id, text=last.text + event.text)
        else:
            merged.append(event)
    return merged
