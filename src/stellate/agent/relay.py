"""Agent events across processes: what one worker's agent publishes, the subscribers of every other worker see.

The relay sends each event this agent publishes on the store's ``events`` signal channel (batched: the events
waiting when the sender wakes go in one transaction, and consecutive text chunks of one session are merged),
and hands the events of other agents on the same store and space to this agent's subscribers. Remote events
never reach hooks (a hook's side effects belong to the process that ran the work) and are never sent on again.

Signals only wake and inform: what is committed is in the log, which subscribers of a session reread from
their last seq, so a lost event costs nothing stored. Text chunks of a running turn exist only here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated

from pydantic import Field, TypeAdapter, ValidationError

from stellate.agent.bus import EventBus
from stellate.engine.events import AgentEvent, TextChunk
from stellate.store import BaseStore
from stellate.store.signals import RESYNC, Reassembler, Subscription, fragments

__all__ = ["EVENTS_CHANNEL", "EventRelay"]

EVENTS_CHANNEL = "events"
_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(Annotated[AgentEvent, Field(discriminator="type")])
_log = logging.getLogger(__name__)


class EventRelay:
    """Connects an agent's event bus to the other processes sharing its store."""

    def __init__(self, *, owner: str, store: Callable[[], Awaitable[BaseStore]], bus: EventBus) -> None:
        self._owner = owner
        self._store = store
        self._bus = bus
        self._outbox: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._receiver: asyncio.Task[None] | None = None
        self._started = asyncio.Lock()

    def send(self, event: AgentEvent) -> None:
        """Queue an event of this agent for the other processes (the hook the agent registers)."""
        self._outbox.put_nowait(event)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_forever(), name="stellate relay out")

    async def start_receiving(self) -> None:
        """Listen for other processes' events (once; on the first subscriber)."""
        async with self._started:
            if self._receiver is None:
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

    async def _send_forever(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            stop = None in batch
            events = [event for event in batch if event is not None]
            if events:
                await self._publish(events)
            if stop:
                return

    async def _publish(self, batch: list[AgentEvent]) -> None:
        try:
            store = await self._store()
            payloads = [p for event in _merge_text(batch) for p in fragments(self._envelope(store, event))]
            await store.signals.publish(EVENTS_CHANNEL, payloads)
        except Exception as exc:  # the relay is best effort: the log holds everything committed
            _log.warning("could not relay %d agent event(s) to other processes: %s", len(batch), exc)

    def _envelope(self, store: BaseStore, event: AgentEvent) -> str:
        body = _EVENT.dump_python(event, mode="json")
        return json.dumps({"origin": self._owner, "space": _space(store), "event": body}, separators=(",", ":"))

    async def _receive_forever(self, store: BaseStore, subscription: Subscription) -> None:
        joiner = Reassembler()
        with subscription:
            async for _, payload in subscription:
                message = joiner.add(payload) if payload != RESYNC else None
                event = self._remote_event(store, message) if message is not None else None
                if event is not None:
                    await self._bus.publish_remote(event)

    def _remote_event(self, store: BaseStore, message: str) -> AgentEvent | None:
        try:
            envelope = json.loads(message)
            if envelope["origin"] == self._owner or envelope["space"] != _space(store):
                return None
            return _EVENT.validate_python(envelope["event"])
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            _log.warning("ignored a malformed relayed event: %s", exc)
            return None


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
