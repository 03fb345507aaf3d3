from __future__ import annotations

from stellate.log import (
    AssistantMessage,
    Event,
    SystemMessage,
    ToolCall,
    ToolMessage,
    TranscriptFold,
    UserMessage,
    derive_transcript,
    sanitize_messages,
)
from stellate.log.transcript import INTERRUPTED_REPLY_NOTE


def build(*specs: tuple[str, dict[str, object]]) -> list[Event]:
    return [Event(seq=i, type=t, time=0, data=dict(d)) for i, (t, d) in enumerate(specs)]


def turn(n: int, user: str, reply: str | None, reason: str = "completed") -> list[tuple[str, dict[str, object]]]:
    specs: list[tuple[str, dict[str, object]]] = [("turn/start", {"turn": n}), ("user/message", {"content": user})]
    specs.append(("step/start", {"turn": n, "step": 1}))
    if reply is not None:
        specs.append(("assistant/message", {"content": reply, "tool_calls": []}))
    specs += [("step/end", {"turn": n, "step": 1}), ("turn/end", {"turn": n, "reason": reason})]
    return specs


def test_completed_turns_become_user_and_assistant_messages() -> None:
    transcript = derive_transcript(build(*turn(1, "hi", "hello")))
    assert transcript.messages == (UserMessage(content="hi"), AssistantMessage(content="hello"))


def test_turn_that_failed_before_any_output_contributes_nothing() -> None:
    events = build(*turn(1, "a", "A"), *turn(2, "b", None, reason="error"), *turn(3, "c", "C"))
    assert [m.content for m in derive_transcript(events).messages] == ["a", "A", "c", "C"]


def test_aborted_turn_with_partial_output_is_kept() -> None:
    events = build(*turn(1, "a", "partial", reason="aborted"))
    assert [m.content for m in derive_transcript(events).messages] == ["a", "partial"]


def test_empty_assistant_message_is_skipped() -> None:
    events = build(*turn(1, "a", ""))
    assert derive_transcript(events).messages == (UserMessage(content="a"),)


def test_compaction_replaces_everything_it_covers() -> None:
    specs = [*turn(1, "a", "A"), *turn(2, "b", "B")]
    specs.append(("compaction/summary", {"through_seq": 5, "summary": "talked about a"}))
    transcript = derive_transcript(build(*specs))
    assert transcript.summary == "talked about a" and transcript.summary_through_seq == 5
    assert [m.content for m in transcript.messages] == ["b", "B"]


def test_open_turn_is_visible_for_tool_continuations() -> None:
    call = {"id": "c", "name": "t", "arguments": "{}"}
    events = build(
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "q"}),
        ("step/start", {"turn": 1, "step": 1}),
        ("assistant/message", {"content": "", "tool_calls": [call]}),
        ("tool/result", {"call_id": "c", "name": "t", "content": "r", "is_error": False}),
        ("step/end", {"turn": 1, "step": 1}),
    )
    roles = [m.role for m in derive_transcript(events).messages]
    assert roles == ["user", "assistant", "tool"]
    # mid-step, before the result: the unanswered call is not shown
    assert [m.role for m in derive_transcript(events[:4]).messages] == ["user"]


def test_sanitize_drops_incomplete_groups_and_orphan_results() -> None:
    call = ToolCall(id="x", name="t", arguments="{}")
    messages = [
        ToolMessage(call_id="orphan", name="t", content="r"),
        UserMessage(content="q"),
        AssistantMessage(content="thinking", tool_calls=(call, ToolCall(id="y", name="t", arguments="{}"))),
        ToolMessage(call_id="x", name="t", content="r"),
        UserMessage(content="next"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(call_id="x", name="t", content="ok"),
    ]
    out = sanitize_messages(messages)
    assert out == [
        UserMessage(content="q"),
        AssistantMessage(content="thinking"),
        UserMessage(content="next"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(call_id="x", name="t", content="ok"),
    ]


def _closed_turn(first_seq: int, turn: int, text: str) -> list[Event]:
    return [
        Event(seq=first_seq, type="turn/start", time=0, data={"turn": turn}),
        Event(seq=first_seq + 1, type="user/message", time=0, data={"content": text}),
        Event(seq=first_seq + 2, type="assistant/message", time=0, data={"content": "ok", "tool_calls": []}),
        Event(seq=first_seq + 3, type="turn/end", time=0, data={"turn": turn, "reason": "completed"}),
    ]


def test_a_copied_fold_shares_messages_and_stays_independent_of_its_source() -> None:
    source = TranscriptFold(weigh=lambda m: 1)
    for event in _closed_turn(0, 1, "a") + _closed_turn(4, 2, "b"):
        source.add(event)
    twin = source.copy()
    for event in _closed_turn(8, 3, "source only"):
        source.add(event)
    shared = twin.runs[-1]
    assert shared.count == 4 and len(shared.messages) == 6  # the source's own list, not a copy of it
    source.compact(5, "summary")
    for event in _closed_turn(8, 3, "twin only"):
        twin.add(event)
    assert [m.content for m in twin.messages()] == ["a", "ok", "b", "ok", "twin only", "ok"]
    assert [m.content for m in source.messages()] == ["ok", "source only", "ok"]
    assert twin.kept_weight == 6 and source.kept_weight == 3 and twin.summary is None


def test_messages_put_the_lead_first_then_shared_runs_own_messages_and_the_open_turn() -> None:
    fold = TranscriptFold()
    for event in _closed_turn(0, 1, "a"):
        fold.add(event)
    fold = fold.copy()  # the first turn now sits in a shared run
    for event in _closed_turn(4, 2, "b"):
        fold.add(event)
    fold.add(Event(seq=8, type="turn/start", time=0, data={"turn": 3}))
    fold.add(Event(seq=9, type="user/message", time=0, data={"content": "c"}))
    lead = [SystemMessage(content="prompt")]
    messages = fold.messages(lead)
    assert [m.content for m in messages] == ["prompt", "a", "ok", "b", "ok", "c"]
    messages.append(UserMessage(content="not kept"))  # a new list: neither the lead nor the fold changes
    assert lead == [SystemMessage(content="prompt")]
    assert [m.content for m in fold.messages()] == ["a", "ok", "b", "ok", "c"]


def test_kept_since_returns_the_messages_from_a_seq_across_shared_runs() -> None:
    fold = TranscriptFold()
    for event in _closed_turn(0, 1, "a"):
        fold.add(event)
    fold = fold.copy()
    for event in _closed_turn(4, 2, "b"):
        fold.add(event)
    since = fold.kept_since(2)
    assert since.seqs == [2, 5, 6] and [m.content for m in since.messages] == ["ok", "b", "ok"]


def test_an_interrupted_reply_reaches_the_model_marked_as_cut_off() -> None:
    specs = turn(1, "a", None, reason="error")
    specs.insert(3, ("assistant/message", {"content": "partial reply th", "tool_calls": [], "interrupted": True}))
    events = build(*specs, *turn(2, "go on", "done"))
    messages = derive_transcript(events).messages
    assert messages[1] == AssistantMessage(content="partial reply th" + INTERRUPTED_REPLY_NOTE)
    assert "cut off" in INTERRUPTED_REPLY_NOTE
    assert [m.content for m in messages[2:]] == ["go on", "done"]
