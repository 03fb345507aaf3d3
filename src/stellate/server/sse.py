"""Server-sent events: JSON payloads, and the tail of one session's log (resumable by seq)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import ServerSentEvent

from stellate.agent import Agent
from stellate.store import SessionId
from stellate.store.signals import LOG_CHANNEL, Subscription, parse_log_payload

__all__ = ["PING_SECONDS", "POLL_SECONDS", "json_text", "tail_session"]

PING_SECONDS = 15
"""Keep-alive comments, so proxies do not close an idle stream."""
POLL_SECONDS = 5.0
"""How often a tail rereads the log without a wake-up (a signal lost on the way)."""
_BATCH = 500


def json_text(data: Any) -> str:
    """Compact JSON."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


async def tail_session(agent: Agent, session_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
    """Every event of the session's log with seq > ``after``, then new ones as they are written; ``id`` = seq.

    The store's log signal wakes the tail when the session grows, whichever process wrote (PostgreSQL carries
    it between processes); a reread every `POLL_SECONDS` covers a signal lost on the way.
    """
    store = await agent.store()
    record = await store.get_session(SessionId(session_id))
    with await store.signals.subscribe([LOG_CHANNEL]) as signals:  # before the first read: nothing slips by
        while True:
            events = await store.read_events(record.id, start=after + 1, limit=_BATCH)
            for event in events:
                data = {"seq": event.seq, "type": event.type, "time": event.time, "data": event.data}
                data["inherited"] = event.seq < record.inherited
                yield ServerSentEvent(data=json_text(data), event="log", id=str(event.seq))
                after = event.seq
            if len(events) < _BATCH:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_grown(signals, record.id), POLL_SECONDS)


async def _grown(signals: Subscription, session_id: str) -> None:
    """Return when a signal says the session's log grew (or that signals were lost)."""
    while True:
        _, payload = await signals.get()
        parsed = parse_log_payload(payload)
        if parsed is None or parsed[0] == session_id:
            return
