from __future__ import annotations

import pytest

from stellate.errors import InvariantError
from stellate.log import Cursor, Event, advance, check_log, check_messages_pairing


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
