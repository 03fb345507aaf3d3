"""Server-sent events: JSON payloads, and the tail of one session's log (resumable by seq)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import ServerSentEvent

from stellate.agent import Agent
from stellate.engine.events import AgentEvent
from stellate.store import SessionId

__all__ = ["PING_SECONDS", "POLL_SECONDS", "json_text", "tail_session"]

PING_SECONDS = 15
"""Keep-alive comments, so proxies do not close an idle stream."""
POLL_SECONDS = 1.0
"""How often a tail rereads the log without a wake-up (writes by other processes publish nothing here)."""
_BATCH = 500


def json_text(data: Any) -> str:
    """Compact JSON."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


async def tail_session(agent: Agent, session_id: str, after: int) -> AsyncIterator[ServerSentEvent]:
    """Every event of the session's log with seq > ``after``, then new ones as they are written; ``id`` = seq."""
    store = await agent.store()
    record = await store.get_session(SessionId(session_id))
    wake = asyncio.Event()

    def on_event(event: AgentEvent) -> None:
        if getattr(event, "session_id", None) == session_id:
            wake.set()

    remove = agent.add_hook(on_event)
    try:
        while True:
            wake.clear()  # before reading: a write after the read wakes the wait below
            events = await store.read_events(record.id, start=after + 1, limit=_BATCH)
            for event in events:
                data = {"seq": event.seq, "type": event.type, "time": event.time, "data": event.data}
                data["inherited"] = event.seq < record.inherited
                yield ServerSentEvent(data=json_text(data), event="log", id=str(event.seq))
                after = event.seq
            if len(events) < _BATCH:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), POLL_SECONDS)
    finally:
        remove()
