"""``model/called`` in the log rules: it passes the invariants inside its turn, repair and the fork boundary
rules treat it as any event of its turn, and no transcript ever shows it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stellate.errors import ForkError
from stellate.log import Event, check_explicit_boundary, check_log, derive_transcript, resolve_anchor
from stellate.log.fork import find_last
from stellate.log.repair import repair_events
from stellate.log.usage import usage_totals

MARKERS = ("turn/start", "turn/end")


def called(turn: int, step: int, tokens: int | None) -> tuple[str, dict[str, object]]:
    return "model/called", {
        "turn": turn,
        "step": step,
        "provider": "p",
        "model": "m",
        "input_tokens": tokens,
        "output_tokens": tokens,
        "latency_ms": 5,
        "ttft_ms": None,
        "stop_reason": "stop",
    }


def turn_specs(turn: int, tool_steps: int, tokens: list[int | None]) -> list[tuple[str, dict[str, object]]]:
    """A turn as the engine writes it: each step's reply, then its model/called, then its tools."""
    specs: list[tuple[str, dict[str, object]]] = [("turn/start", {"turn": turn}), ("user/message", {"content": "q"})]
    for step in range(1, tool_steps + 2):
        specs.append(("step/start", {"turn": turn, "step": step}))
        is_tool_step = step <= tool_steps
        calls = [{"id": f"c{turn}-{step}", "name": "t", "arguments": "{}"}] if is_tool_step else []
        specs.append(("assistant/message", {"content": "" if is_tool_step else "done", "tool_calls": calls}))
        if is_tool_step:
            specs.append(called(turn, step, tokens[(step - 1) % len(tokens)]))
            specs.append(("tool/call", {"call_id": calls[0]["id"], "name": "t", "arguments": "{}"}))
            result = {"call_id": calls[0]["id"], "name": "t", "content": "r", "is_error": False}
            specs += [("tool/result", result), ("step/end", {"turn": turn, "step": step})]
        else:
            specs += [("step/end", {"turn": turn, "step": step}), called(turn, step, tokens[-1])]
    return [*specs, ("turn/end", {"turn": turn, "reason": "completed"})]


def as_log(specs: list[tuple[str, dict[str, object]]]) -> list[Event]:
    return [Event(seq=i, type=t, time=0, data=dict(d), ignorable=t == "model/called") for i, (t, d) in enumerate(specs)]


logs = st.lists(
    st.tuples(st.integers(0, 2), st.lists(st.one_of(st.none(), st.integers(0, 50)), min_size=1, max_size=3)),
    min_size=1,
    max_size=3,
).map(lambda turns: as_log([s for n, (tools, tokens) in enumerate(turns, 1) for s in turn_specs(n, tools, tokens)]))


@given(logs)
def test_a_log_with_model_calls_is_valid_and_its_transcript_ignores_them(log: list[Event]) -> None:
    check_log(log)
    without = [e for e in log if e.type != "model/called"]
    renumbered = [Event(seq=i, type=e.type, time=0, data=e.data) for i, e in enumerate(without)]
    assert derive_transcript(log).messages == derive_transcript(renumbered).messages
    assert usage_totals(log).calls == len(log) - len(without)


@given(logs, st.data())
def test_repair_closes_a_log_cut_anywhere_after_a_model_call(log: list[Event], data: st.DataObject) -> None:
    cut = data.draw(st.integers(1, len(log)))
    prefix = log[:cut]
    cursor = check_log(prefix)
    names = {c["id"]: c["name"] for e in prefix if e.type == "assistant/message" for c in e.data["tool_calls"]}
    closers = repair_events(cursor, call_names=names, time=0)
    repaired = prefix + [Event(seq=cut + i, type=c.type, time=0, data=c.data) for i, c in enumerate(closers)]
    closed = check_log(repaired)
    assert not closed.turn_open
    assert repair_events(closed, call_names=names, time=0) == []


@given(logs, st.data())
def test_a_model_call_is_inside_its_turn_for_the_fork_rules(log: list[Event], data: st.DataObject) -> None:
    seq = data.draw(st.sampled_from([e.seq for e in log if e.type == "model/called"]))
    marker = find_last(log, MARKERS, at_or_before=seq)
    with pytest.raises(ForkError) as refused:
        check_explicit_boundary(seq, next_seq=len(log), last_marker=marker)
    assert refused.value.code == "open_turn"
    end = next(e for e in log if e.type == "turn/end" and e.seq > seq)
    anchored = resolve_anchor(
        seq,
        next_seq=len(log),
        turn_open=False,
        marker_at_anchor=marker,
        end_after_anchor=end,
        last_turn_end=find_last(log, ("turn/end",), at_or_before=len(log)),
    )
    assert anchored == end.seq and log[end.seq].data["turn"] == log[seq].data["turn"]
