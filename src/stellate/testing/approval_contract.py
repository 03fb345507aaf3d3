"""Store rules for paused turns (tool calls waiting for approval), part of the store contract.

A paused turn is open in the log but nobody runs it: its lease is free on purpose, repair must leave it,
forks cut before it, and it survives a reopen and a JSONL round trip. Re-exported by
`stellate.testing.store_contract`, so every backend runs these rules.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from stellate.errors import ForkError, InvariantError
from stellate.log import NewEvent, check_log, derive_transcript, make_event
from stellate.store import Anchor, BaseStore, CompletedTurn, ForkRequest, export_session, import_session
from stellate.store.digests import digest_of
from stellate.testing.contract_support import S, with_turns

_CALLS = [{"id": "c1", "name": "delete", "arguments": '{"path": "a"}'}, {"id": "c2", "name": "look", "arguments": "{}"}]


def paused_turn(n: int) -> list[NewEvent]:
    """Turn ``n`` paused: its reply asks for two calls, ``c1`` waits for approval, nothing started."""
    request = {"turn": n, "step": 1, "call_id": "c1", "name": "delete", "arguments": '{"path": "a"}'}
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": "delete a"}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": "", "tool_calls": _CALLS}),
        make_event("tool/approval_requested", {**request, "deadline": None, "on_timeout": "deny"}),
    ]


def resumed_step(n: int) -> list[NewEvent]:
    """The decision on ``c1`` and the step's results, closing turn ``n``."""
    return [
        make_event("tool/approval_decided", {"call_id": "c1", "decision": "denied", "by": "ann", "reason": "no"}),
        make_event("tool/call", {"call_id": "c2", "name": "look", "arguments": "{}"}),
        make_event("tool/result", {"call_id": "c1", "name": "delete", "content": "denied", "is_error": True}),
        make_event("tool/result", {"call_id": "c2", "name": "look", "content": "seen", "is_error": False}),
        make_event("step/end", {"turn": n, "step": 1}),
        make_event("turn/end", {"turn": n, "reason": "completed"}),
    ]


async def test_a_paused_turn_is_stored_paused_and_repair_leaves_it(store: BaseStore) -> None:
    """The cursor says paused (turn open, c1 awaiting), the lease is free, and repair appends nothing."""
    await with_turns(store, "a", 1)
    await store.append(S("a"), paused_turn(2))
    record = await store.get_session(S("a"))
    assert record.cursor.paused and record.cursor.turn_open and record.cursor.awaiting == ("c1",)
    assert record.lease is None
    assert await store.repair(S("a")) == []
    assert (await store.get_session(S("a"))).next_seq == record.next_seq


async def test_a_paused_session_is_listed_as_its_record_says(store: BaseStore) -> None:
    """The listed digest of a paused session equals its record's digest, and says a turn is open."""
    await with_turns(store, "a", 1)
    await store.append(S("a"), paused_turn(2))
    [listed] = await store.list_digests()
    assert listed == digest_of(await store.get_session(S("a"))) and listed.turn_open


async def test_a_waiting_call_cannot_run_or_be_answered_before_its_decision(store: BaseStore) -> None:
    """tool/call and tool/result of a call waiting for approval are refused, and the batch with them."""
    await with_turns(store, "a", 0)
    await store.append(S("a"), paused_turn(1))
    for event in (
        make_event("tool/call", {"call_id": "c1", "name": "delete", "arguments": "{}"}),
        make_event("tool/result", {"call_id": "c1", "name": "delete", "content": "x"}),
        make_event("tool/approval_decided", {"call_id": "c2", "decision": "approved", "by": "ann"}),
    ):
        with pytest.raises(InvariantError):
            await store.append(S("a"), [event])
    assert (await store.get_session(S("a"))).cursor.awaiting == ("c1",)


async def test_the_decision_and_the_results_close_the_paused_turn(store: BaseStore) -> None:
    """After the decision the turn goes on as any other; its transcript pairs every call with a result."""
    await with_turns(store, "a", 0)
    await store.append(S("a"), paused_turn(1))
    await store.append(S("a"), resumed_step(1))
    events = await store.read_events(S("a"))
    cursor = check_log(events)
    assert not cursor.turn_open and not cursor.paused
    assert [m.role for m in derive_transcript(events).messages] == ["user", "assistant", "tool", "tool"]


async def test_a_decided_turn_whose_writer_died_is_repaired_as_interrupted(store: BaseStore) -> None:
    """Once no call waits, an open turn nobody holds is dead: repair closes it (its calls were not started)."""
    await with_turns(store, "a", 0)
    await store.append(S("a"), paused_turn(1))
    await store.append(S("a"), resumed_step(1)[:1])
    added = await store.repair(S("a"))
    assert [e.type for e in added] == ["tool/result", "tool/result", "step/end", "turn/end"]
    assert [e.data["interrupted"] for e in added[:2]] == ["not_started", "not_started"]


async def test_forks_of_a_paused_session_cut_at_its_last_completed_turn(store: BaseStore) -> None:
    """A completed-turn fork inherits the turns before the pause; an anchor inside it is unavailable."""
    await with_turns(store, "src", 1)
    await store.append(S("src"), paused_turn(2))
    child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=CompletedTurn()))
    assert child.fork_seq == 6 and not child.cursor.turn_open
    with pytest.raises(ForkError) as info:
        await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=9)))
    assert info.value.code == "fork_unavailable"


async def test_a_paused_session_survives_reopen_and_jsonl(store: BaseStore, reopen: Any) -> None:
    """Closing and opening the store, or exporting and importing the session, keeps the turn paused."""
    await with_turns(store, "a", 1)
    await store.append(S("a"), paused_turn(2))
    store = await reopen(store)
    assert (await store.get_session(S("a"))).cursor.awaiting == ("c1",)
    buffer = io.StringIO()
    await export_session(store, S("a"), buffer)
    buffer.seek(0)
    copy = await import_session(store, buffer, session_id=S("copy"))
    assert copy.cursor.paused
    await store.append(S("copy"), resumed_step(2))


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
