from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stellate.errors import InvariantError
from stellate.log import Cursor, Event, advance, check_log, check_messages_pairing, derive_transcript, repair_events


def ev(seq: int, type: str, **data: object) -> Event:
    return Event(seq=seq, type=type, time=0, data=dict(data))


def log(*specs: tuple[str, dict[str, object]]) -> list[Event]:
    return [ev(i, t, **d) for i, (t, d) in enumerate(specs)]


CALLS = [{"id": "a", "name": "t", "arguments": "{}"}, {"id": "b", "name": "t", "arguments": "{}"}]


def tool_step_prefix() -> list[Event]:
    return log(
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "q"}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/message", {"content": "", "tool_calls": CALLS}),
    )


def test_seq_must_continue_the_log() -> None:
    with pytest.raises(InvariantError, match="expected seq 0"):
        advance(Cursor(), ev(1, "user/message", content="x"))


def test_turns_are_numbered_from_one_and_never_nest() -> None:
    with pytest.raises(InvariantError, match="numbered 1"):
        check_log(log(("turn/start", {"turn": 2})))
    with pytest.raises(InvariantError, match="never nest"):
        check_log(log(("turn/start", {"turn": 1}), ("turn/start", {"turn": 2})))


def test_step_needs_an_open_turn() -> None:
    with pytest.raises(InvariantError, match="open turn"):
        check_log(log(("step/start", {"turn": 1, "step": 1})))


def test_step_cannot_end_with_an_unanswered_call() -> None:
    events = [*tool_step_prefix(), ev(4, "tool/result", call_id="a", name="t", content="r", is_error=False)]
    with pytest.raises(InvariantError, match="without a result: b"):
        check_log([*events, ev(5, "step/end", turn=1, step=1)])


def test_result_must_answer_a_requested_call_once() -> None:
    prefix = tool_step_prefix()
    with pytest.raises(InvariantError, match="no tool call 'zz'"):
        check_log([*prefix, ev(4, "tool/result", call_id="zz", name="t", content="r", is_error=False)])
    twice = [
        *prefix,
        ev(4, "tool/result", call_id="a", name="t", content="r", is_error=False),
        ev(5, "tool/result", call_id="a", name="t", content="r", is_error=False),
    ]
    with pytest.raises(InvariantError, match="already has its result"):
        check_log(twice)


def test_turn_cannot_end_with_a_step_open() -> None:
    with pytest.raises(InvariantError, match="still open"):
        check_log([*tool_step_prefix()[:3], ev(3, "turn/end", turn=1, reason="completed")])


def test_one_assistant_message_per_step() -> None:
    events = log(
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/message", {"content": "a", "tool_calls": []}),
        ("assistant/message", {"content": "b", "tool_calls": []}),
    )
    with pytest.raises(InvariantError, match="one assistant message"):
        check_log(events)


def test_standalone_assistant_message_cannot_call_tools() -> None:
    check_log(log(("assistant/message", {"content": "Welcome", "tool_calls": []})))
    with pytest.raises(InvariantError, match="only allowed inside a step"):
        check_log(log(("assistant/message", {"content": "", "tool_calls": CALLS})))


def test_user_message_cannot_interrupt_a_step() -> None:
    with pytest.raises(InvariantError, match="interrupt"):
        check_log([*tool_step_prefix(), ev(4, "user/message", content="hey")])


def test_compaction_must_point_back_and_sit_outside_steps() -> None:
    with pytest.raises(InvariantError, match="earlier event"):
        check_log(log(("user/message", {"content": "x"}), ("compaction/summary", {"through_seq": 1, "summary": "s"})))
    with pytest.raises(InvariantError, match="inside a step"):
        check_log([*tool_step_prefix(), ev(4, "compaction/summary", through_seq=1, summary="s")])


def test_imported_context_must_pair_calls_and_results() -> None:
    good = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": CALLS[:1]},
        {"role": "tool", "call_id": "a", "name": "t", "content": "r"},
    ]
    check_log(log(("context/imported", {"messages": good})))
    with pytest.raises(InvariantError, match="not a valid transcript"):
        check_log(log(("context/imported", {"messages": good[:2]})))
    with pytest.raises(ValueError, match="answers no open call"):
        check_messages_pairing([good[2]])


def test_slot_and_ignorable_events_may_stand_anywhere() -> None:
    events = [*tool_step_prefix(), ev(4, "memory/put", content="m"), ev(5, "app/custom")]
    cursor = check_log(events)
    assert cursor.unanswered == ("a", "b") and cursor.next_seq == 6


def test_cursor_json_round_trip() -> None:
    cursor = check_log([*tool_step_prefix(), ev(4, "tool/call", call_id="a", name="t", arguments="{}")])
    assert Cursor.from_json(cursor.to_json()) == cursor


def request(seq: int, call_id: str, *, turn: int = 1, step: int = 1) -> Event:
    return ev(seq, "tool/approval_requested", turn=turn, step=step, call_id=call_id, name="t", arguments="{}",
              deadline=None, on_timeout="deny")  # fmt: skip


def test_an_approval_request_pauses_the_turn_until_its_decision() -> None:
    cursor = check_log([*tool_step_prefix(), request(4, "b")])
    assert cursor.paused and cursor.awaiting == ("b",) and cursor.unanswered == ("a", "b")
    decided = advance(cursor, ev(5, "tool/approval_decided", call_id="b", decision="denied", by="p"))
    assert not decided.paused and decided.turn_open and decided.unanswered == ("a", "b")


def test_a_waiting_call_neither_runs_nor_is_answered_nor_decided_twice() -> None:
    cursor = check_log([*tool_step_prefix(), request(4, "a")])
    for refused in (
        ev(5, "tool/call", call_id="a", name="t", arguments="{}"),
        ev(5, "tool/result", call_id="a", name="t", content="x", is_error=False),
        request(5, "a"),
        ev(5, "tool/approval_decided", call_id="b", decision="approved", by="p"),
        ev(5, "step/end", turn=1, step=1),
    ):
        with pytest.raises(InvariantError):
            advance(cursor, refused)
    assert advance(cursor, ev(5, "tool/call", call_id="b", name="t", arguments="{}")).paused


def test_approval_requests_belong_to_unstarted_calls_of_the_open_step() -> None:
    started = check_log([*tool_step_prefix(), ev(4, "tool/call", call_id="a", name="t", arguments="{}")])
    for refused in (request(5, "a"), request(5, "zz"), request(5, "b", step=2)):
        with pytest.raises(InvariantError):
            advance(started, refused)


def test_a_cursor_stored_before_approvals_existed_reads_as_not_paused() -> None:
    cursor = check_log([*tool_step_prefix(), request(4, "a")])
    assert Cursor.from_json(cursor.to_json()) == cursor
    old = {k: v for k, v in check_log(tool_step_prefix()).to_json().items() if k != "awaiting"}
    assert Cursor.from_json(old).awaiting == ()


@given(st.data(), st.integers(1, 4))
def test_repair_leaves_exactly_the_paused_steps_and_closes_the_rest_validly(data: st.DataObject, n: int) -> None:
    """Whatever was asked, decided and started in a step: repair appends nothing while a call waits for its
    decision, and otherwise closes the turn into a log whose transcript pairs every call with a result."""
    ids = [f"c{i}" for i in range(n)]
    calls = [{"id": c, "name": "t", "arguments": "{}"} for c in ids]
    events = log(
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "q"}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/message", {"content": "", "tool_calls": calls}),
    )
    asked = data.draw(st.lists(st.sampled_from(ids), unique=True))
    decided = data.draw(st.lists(st.sampled_from(asked), unique=True)) if asked else []
    free = [c for c in ids if c not in asked or c in decided]
    started = data.draw(st.lists(st.sampled_from(free), unique=True)) if free else []
    for call_id in asked:
        events.append(request(len(events), call_id))
    for call_id in decided:
        events.append(ev(len(events), "tool/approval_decided", call_id=call_id, decision="approved", by="p"))
    for call_id in started:
        events.append(ev(len(events), "tool/call", call_id=call_id, name="t", arguments="{}"))
    cursor = check_log(events)
    closers = repair_events(cursor, call_names={c: "t" for c in ids}, time=0)
    assert cursor.paused == (set(asked) != set(decided))
    if cursor.paused:
        assert closers == []
        return
    closed = [*events, *(ev(len(events) + i, e.type, **e.data) for i, e in enumerate(closers))]
    final = check_log(closed)
    assert not final.turn_open and not final.paused
    roles = [m.role for m in derive_transcript(closed).messages]
    assert roles == ["user", "assistant", *["tool"] * n]
    assert repair_events(final, call_names={}, time=0) == []


def called(seq: int, turn: int = 1, step: int = 1) -> Event:
    data = {"turn": turn, "step": step, "provider": "p", "model": "m", "input_tokens": None}
    data |= {"output_tokens": None, "latency_ms": 3, "ttft_ms": None, "stop_reason": None}
    return ev(seq, "model/called", **data)


def test_model_call_is_recorded_inside_its_turn_after_its_step_started() -> None:
    """A ``model/called`` event names a started step of the open turn; it changes nothing else in the cursor."""
    prefix = tool_step_prefix()
    inside = check_log([*prefix, called(4)])
    assert inside.unanswered == ("a", "b") and inside.next_seq == 5
    with pytest.raises(InvariantError, match="after its step/start"):
        check_log([*prefix, called(4, step=2)])
    with pytest.raises(InvariantError, match="inside its turn"):
        check_log([*prefix, called(4, turn=2)])
    closed = log(("turn/start", {"turn": 1}), ("turn/end", {"turn": 1, "reason": "completed"}))
    with pytest.raises(InvariantError, match="inside its turn"):
        check_log([*closed, called(2)])


def test_model_call_after_step_end_still_belongs_to_the_turn() -> None:
    events = log(
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "q"}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/message", {"content": "a", "tool_calls": []}),
        ("step/end", {"turn": 1, "step": 1}),
    )
    cursor = check_log([*events, called(5), ev(6, "turn/end", turn=1, reason="completed")])
    assert not cursor.turn_open and cursor.last_end_seq == 6
