"""Builders the contract suites share: event batches for whole or open turns, seeded sessions and a settable clock.

They are public so a backend's own tests can build the same logs the contract does (``turn(1)``, ``open_tool_turn(2)``).
"""

from __future__ import annotations

from stellate.log import NewEvent, make_event
from stellate.store import BaseStore, SessionId

S = SessionId


def turn(n: int, user: str = "hi", reply: str = "ok") -> list[NewEvent]:
    """A completed turn without tools."""
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": user}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": reply, "tool_calls": []}),
        make_event("step/end", {"turn": n, "step": 1}),
        make_event("turn/end", {"turn": n, "reason": "completed"}),
    ]


def open_tool_turn(n: int) -> list[NewEvent]:
    """A turn left open mid-step: two tool calls requested, the first started, none answered."""
    calls = [{"id": "c1", "name": "search", "arguments": "{}"}, {"id": "c2", "name": "fetch", "arguments": "{}"}]
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": "look it up"}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": "", "tool_calls": calls}),
        make_event("tool/call", {"call_id": "c1", "name": "search", "arguments": "{}"}),
    ]


async def with_turns(store: BaseStore, sid: str, turns: int) -> None:
    """Create session ``sid`` labelled ``sid`` (seq 0) and append ``turns`` completed turns of six events each.

    Turn ``n`` says ``u{n}`` and is answered ``a{n}``, so the session's next seq is ``1 + 6 * turns``.
    """
    await store.create_session(session_id=S(sid), events=[make_event("session/created", {"label": sid})])
    for n in range(1, turns + 1):
        await store.append(S(sid), turn(n, user=f"u{n}", reply=f"a{n}"))


class Clock:
    """A settable epoch-ms clock for a store, so lease and claim expiry need no sleeping.

    Attributes:
        now: The time the store reads, in epoch milliseconds; tests move it forward by hand.
    """

    def __init__(self, store: BaseStore) -> None:
        self.now = 1_000_000_000_000
        store.clock = lambda: self.now
