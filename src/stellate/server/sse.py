"""Server-sent events: JSON payloads, and the tail of one session's log (resumable by seq).

A tail outlives the store's blinks: when the database cannot be reached (a restart, a dropped connection) it
sends keep-alive comments and retries with backoff, then goes on from the last event it sent. The client sees
a pause, never a cut. The tail of a space's event history is `stellate.server.history_stream`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from stellate.agent import Agent
from stellate.errors import StoreError, is_unavailable
from stellate.server.event_stream import PING_SECONDS, ServerSentEvent
from stellate.store import SessionId, SessionRecord
from stellate.store.signals import LOG_CHANNEL, Subscription, parse_log_payload

__all__ = ["PING_SECONDS", "POLL_SECONDS", "StoreWait", "json_text", "tail_session"]

POLL_SECONDS = 5.0
"""How often a tail rereads the log without a wake-up (a signal lost on the way)."""
_BATCH = 500
_BACKOFF = (0.2, 0.5, 1.0, 2.0)


def json_text(data: Any) -> str:
    """Compact JSON."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


class StoreWait:
    """How a stream waits out a store that cannot be reached: a keep-alive comment, then a growing pause."""

    def __init__(self) -> None:
        self._attempt = 0

    def keep_alive(self, exc: StoreError) -> ServerSentEvent:
        """The comment to send while waiting; re-raises ``exc`` unless the store is only unavailable."""
        if not is_unavailable(exc):
            raise exc
        return ServerSentEvent(comment=f"waiting for the store ({exc.code})")

    async def pause(self) -> None:
        """Sleep before the next attempt (longer each time, up to 2 s)."""
        await asyncio.sleep(_BACKOFF[min(self._attempt, len(_BACKOFF) - 1)])
        self._attempt += 1

    def answered(self) -> None:
        """The store answered: the next wait starts short again."""
        self._attempt = 0


async def tail_session(agent: Agent, session_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
    """Every event of the session's log with seq > ``after``, then new ones as they are written; ``id`` = seq.

    The store's log signal wakes the tail when the session grows, whichever process wrote (PostgreSQL carries
    it between processes); a reread every `POLL_SECONDS` covers a signal lost on the way. While the store
    cannot be reached the tail waits (see `StoreWait`) and resumes after the last seq it sent.
    """
    store = await agent.store()
    wait = StoreWait()
    record: SessionRecord | None = None
    with await store.signals.subscribe([LOG_CHANNEL]) as signals:  # before the first read: nothing slips by
        while True:
            try:
                record = record or await store.get_session(SessionId(session_id))
                events = await store.read_events(record.id, start=after + 1, limit=_BATCH)
            except StoreError as exc:
                yield wait.keep_alive(exc)
                await wait.pause()
                continue
            wait.answered()
            for event in events:
                data = {"seq": event.seq, "type": event.type, "time": event.time, "data": event.data}
                data["inherited"] = event.seq < record.inherited
                yield ServerSentEvent(data=json_text(data), event="log", id=str(event.seq))
                after = event.seq
            if len(events) < _BATCH:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(POLL_SECONDS):  # not `wait_for`: no task while the tail idles
                        await _grown(signals, record.id)


async def _grown(signals: Subscription, session_id: str) -> None:
    """Return when a signal says the session's log grew (or that signals were lost)."""
    while True:
        _, payload = await signals.get()
        parsed = parse_log_payload(payload)
        if parsed is None or parsed[0] == session_id:
            return
