from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from stellate.errors import ArchivedError, ProviderError, UsageError
from stellate.llm.scripted import Delay, Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest, TextDelta, Usage
from stellate.log import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
    check_log,
    derive_transcript,
    make_event,
)
from stellate.log.usage import call_usage
from stellate.session import SendDone, Session, SessionRuntime, identity_text
from stellate.store import BaseStore, SessionId
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[BaseStore]:
    s = await SqliteStore.open(str(tmp_path / "s.db"))
    yield s
    await s.close()


def runtime(llm: ScriptedLLM, **kw: object) -> SessionRuntime:
    return SessionRuntime(llm=llm, **kw)  # type: ignore[arg-type]


async def types_of(store: BaseStore, sid: SessionId) -> list[str]:
    return [e.type for e in await store.read_events(sid)]


async def test_send_is_one_call_recorded_as_a_turn(store: BaseStore) -> None:
    llm = ScriptedLLM(["hello there"])
    session = await Session.create(store, runtime(llm), label="Trip")
    result = await session.send("hi")
    assert result.content == "hello there" and result.turn == 1
    assert len(llm.requests) == 1
    assert await types_of(store, session.id) == [
        "session/created",
        "turn/start",
        "user/message",
        "step/start",
        "assistant/message",
        "step/end",
        "model/called",
        "turn/end",
    ]
    reply = (await store.read_events(session.id, types=["assistant/message"]))[0]
    assert reply.data["provider"] == "scripted" and reply.data["usage"]["input_tokens"] > 0


async def test_context_order_is_fixed_and_memory_never_sent(store: BaseStore) -> None:
    llm = ScriptedLLM(["first", "second"])
    session = await Session.create(store, runtime(llm), label="Budget", system_prompt="Be precise.")
    await session.send("one")
    await session.put_memory("SECRET MEMORY")
    await session.put_insight("Tuition is lower than assumed")
    await session.send("two")
    messages = list(llm.requests[1].messages)
    assert messages[0] == SystemMessage(content="Be precise.")
    assert messages[1] == SystemMessage(content=identity_text("Budget"))
    assert isinstance(messages[2], SystemMessage) and "Tuition is lower" in messages[2].content
    assert messages[3:] == [
        UserMessage(content="one"),
        AssistantMessage(content="first"),
        UserMessage(content="two"),
    ]
    assert all("SECRET MEMORY" not in m.content for r in llm.requests for m in r.messages)


async def test_memory_stays_out_of_tool_continuations(store: BaseStore) -> None:
    call = tool_call("lookup", {"q": "x"})
    llm = ScriptedLLM([Reply(tool_calls=[call]), "done"])
    session = await Session.create(store, runtime(llm), label="L")
    await session.put_memory("SECRET MEMORY")
    async with session.turn("go") as turn:
        first = await turn.step()
        await turn.record_tool_call(call)
        await turn.record_tool_results([(call, "result", False)])
        await turn.step()
    assert first.tool_calls == (call,)
    continuation = llm.requests[1].messages
    assert [m.role for m in continuation] == ["system", "user", "assistant", "tool"]
    assert all("SECRET" not in m.content for r in llm.requests for m in r.messages)
    check_log(await store.read_events(session.id))


async def test_insight_is_consumed_only_after_a_successful_call(store: BaseStore) -> None:
    llm = ScriptedLLM([ProviderError("overloaded"), "ok", "again"])
    session = await Session.create(store, runtime(llm))
    await session.put_insight("look at costs")
    with pytest.raises(ProviderError):
        await session.send("q1")
    assert session.insight == "look at costs"
    end = (await store.read_events(session.id, types=["turn/end"]))[-1]
    assert end.data["reason"] == "error" and end.data["error"]["code"] == "provider_error"
    await session.send("q2")
    assert session.insight is None
    assert any("look at costs" in m.content for m in llm.requests[1].messages)
    await session.send("q3")
    assert all("look at costs" not in m.content for m in llm.requests[2].messages)
    # the failed turn left nothing in the transcript
    assert [m.content for m in await session.messages()] == ["q2", "ok", "q3", "again"]


async def test_stream_yields_deltas_then_the_recorded_result(store: BaseStore) -> None:
    llm = ScriptedLLM(["streamed reply text"])
    session = await Session.create(store, runtime(llm))
    events = [e async for e in session.stream("hi")]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "streamed reply text"
    assert isinstance(events[-1], SendDone) and events[-1].result.content == text
    assert [m.content for m in await session.messages()] == ["hi", "streamed reply text"]


async def test_cancelled_send_leaves_a_valid_aborted_turn(store: BaseStore) -> None:
    llm = ScriptedLLM([Delay(seconds=5, then="never"), "fine"])
    session = await Session.create(store, runtime(llm))
    task = asyncio.create_task(session.send("slow"))
    while not llm.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await store.read_events(session.id)
    assert events[-1].type == "turn/end" and events[-1].data["reason"] == "aborted"
    check_log(events)
    await session.send("next")
    assert [m.content for m in await session.messages()] == ["next", "fine"]


async def test_stream_closed_early_records_partial_text_as_aborted(store: BaseStore) -> None:
    llm = ScriptedLLM(["one two three four"])
    session = await Session.create(store, runtime(llm))
    stream = session.stream("hi")
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    events = await store.read_events(session.id)
    assert events[-1].data["reason"] == "aborted"
    reply = [e for e in events if e.type == "assistant/message"][0]
    assert reply.data["interrupted"] is True and reply.data["content"] == "one "
    check_log(events)


async def test_empty_and_oversized_input_fail_before_any_call(store: BaseStore) -> None:
    llm = ScriptedLLM(["x"], max_context_tokens=100)
    session = await Session.create(store, runtime(llm))
    with pytest.raises(UsageError):
        await session.send("   ")
    with pytest.raises(UsageError) as info:
        await session.send("word " * 500)
    assert info.value.code == "context_too_large"
    assert llm.requests == []
    assert await types_of(store, session.id) == ["session/created"]


async def test_archived_session_refuses_turns(store: BaseStore) -> None:
    session = await Session.create(store, runtime(ScriptedLLM(["x"])))
    await session.archive()
    with pytest.raises(ArchivedError):
        await session.send("hi")
    with pytest.raises(ArchivedError):
        await session.put_insight("x")


async def test_context_of_every_past_step_is_rebuilt_exactly(store: BaseStore) -> None:
    call = tool_call("calc", {"x": 1})
    llm = ScriptedLLM(["a", Reply(text="checking", tool_calls=[call]), "b", "c"], max_context_tokens=300)
    session = await Session.create(store, runtime(llm, compress_fn=_summarize), label="R", system_prompt="sys")
    await session.send("first " * 10)
    await session.put_insight("hint")
    async with session.turn("second " * 10) as turn:
        await turn.step()
        await turn.record_tool_results([(call, "2", False)])
        await turn.step()
    await session.set_label("Renamed")
    await session.send("third " * 10)
    replies = await store.read_events(session.id, types=["assistant/message"])
    assert len(replies) == len(llm.requests) == 4
    for reply, request in zip(replies, llm.requests, strict=True):
        assert await session.context_at(reply.seq) == list(request.messages)
    reopened = await Session.load(store, session.id, runtime(llm, compress_fn=_summarize))
    assert await reopened.context_at(replies[-1].seq) == list(llm.requests[-1].messages)


async def _summarize(messages: Sequence[Message]) -> str:
    return f"summary of {len(messages)} messages"


async def test_compression_summarizes_down_and_survives_restart(store: BaseStore) -> None:
    calls: list[int] = []

    async def compress(messages: Sequence[Message]) -> str:
        calls.append(len(messages))
        return "SUMMARY"

    llm = ScriptedLLM(default="reply " * 20, max_context_tokens=1000)
    session = await Session.create(store, runtime(llm, compress_fn=compress))
    for i in range(12):
        await session.send(f"question {i} " + "pad " * 40)
    assert calls, "the history should have crossed 0.8 x the window"
    compactions = await store.read_events(session.id, types=["compaction/summary"])
    assert len(compactions) == len(calls) < 6
    for request in llm.requests:
        assert sum(len(m.content) // 4 + 4 for m in request.messages) < 1000
    last = llm.requests[-1].messages
    assert any(isinstance(m, SystemMessage) and "SUMMARY" in m.content for m in last)
    reopened = await Session.load(store, session.id, runtime(llm, compress_fn=compress))
    assert reopened.context() == session.context()


async def test_compression_never_splits_a_tool_group(store: BaseStore) -> None:
    seen: list[Sequence[Message]] = []

    async def compress(messages: Sequence[Message]) -> str:
        seen.append(messages)
        return "S"

    llm = ScriptedLLM(max_context_tokens=600)
    session = await Session.create(store, runtime(llm, compress_fn=compress))
    for i in range(8):
        call = tool_call("t", {"i": i})
        llm.push(Reply(text="pad " * 15, tool_calls=[call]), "done " * 15)
        async with session.turn(f"q{i} " + "pad " * 15) as turn:
            await turn.step()
            await turn.record_tool_results([(call, "r " * 15, False)])
            await turn.step()
    assert seen
    for request in llm.requests:
        history = [m for m in request.messages if not isinstance(m, SystemMessage)]
        assert not isinstance(history[0], ToolMessage)
    for summarized in seen:
        body = [m for m in summarized if not isinstance(m, SystemMessage)]
        calls = {c.id for m in body if isinstance(m, AssistantMessage) for c in m.tool_calls}
        results = {m.call_id for m in body if isinstance(m, ToolMessage)}
        assert calls == results


async def test_failing_compress_still_answers_on_bounded_history(store: BaseStore) -> None:
    async def broken(messages: Sequence[Message]) -> str:
        raise RuntimeError("summarizer down")

    llm = ScriptedLLM(default="reply " * 20, max_context_tokens=800)
    session = await Session.create(store, runtime(llm, compress_fn=broken))
    for i in range(10):
        await session.send(f"q{i} " + "pad " * 40)
    errors = await store.read_events(session.id, types=["error/reported"])
    assert errors and errors[0].data["code"] == "compress_failed" and "summarizer down" in errors[0].data["message"]
    assert all(sum(len(m.content) // 4 + 4 for m in r.messages) < 800 for r in llm.requests)
    assert await session.context_at((await store.read_events(session.id, types=["assistant/message"]))[-1].seq) == list(
        llm.requests[-1].messages
    )


async def test_consolidate_replaces_memory_with_the_function_output(store: BaseStore) -> None:
    seen: list[tuple[str | None, int]] = []

    async def consolidate(memory: str | None, messages: Sequence[Message]) -> str:
        seen.append((memory, len(messages)))
        return f"memory v{len(seen)}"

    session = await Session.create(store, runtime(ScriptedLLM(default="ok"), consolidate_fn=consolidate))
    await session.send("hi")
    assert await session.consolidate() == "memory v1"
    await session.send("more")
    await session.consolidate()
    assert seen == [(None, 2), ("memory v1", 4)]
    assert (await store.get_session(session.id)).slots.memory == "memory v2"


@pytest.mark.parametrize(("language", "needle"), [("en", "memory of one branch"), ("zh", "分支的记忆")])
async def test_default_consolidate_uses_our_prompt(store: BaseStore, language: str, needle: str) -> None:
    llm = ScriptedLLM(["answer", "<think>hmm</think> the memory "])
    session = await Session.create(store, runtime(llm, language=language))
    await session.send("plan a trip")
    assert await session.consolidate() == "the memory"
    request: LLMRequest = llm.requests[-1]
    assert needle in request.messages[0].content and "plan a trip" in request.messages[1].content


async def test_fork_contexts(store: BaseStore) -> None:
    llm = ScriptedLLM(default="ok")
    parent = await Session.create(store, runtime(llm), label="Root")
    await parent.send("alpha")
    await parent.send("beta")
    await parent.put_memory("parent memory")
    await parent.put_insight("parent insight")

    blank = await parent.fork(label="Blank")
    inherit = await parent.fork(label="Inherit", context="inherit", prompt="Let's dig into beta.")
    picked = await parent.fork(label="Picked", context=lambda ms: [m for m in ms if "beta" in m.content])

    assert await blank.messages() == []
    assert [m.content for m in await inherit.messages()] == ["alpha", "ok", "beta", "ok", "Let's dig into beta."]
    assert inherit.record.inherited > 0 and inherit.record.source_id == parent.id
    assert [m.content for m in await picked.messages()] == ["beta"]
    for child in (blank, inherit, picked):
        assert (child.memory, child.insight, child.record.parent_id) == (None, None, parent.id)
    await inherit.send("gamma")
    assert [m.content for m in llm.requests[-1].messages[1:]][-2:] == ["Let's dig into beta.", "gamma"]
    assert [m.content for m in await parent.messages()] == ["alpha", "ok", "beta", "ok"]


async def test_fork_from_inside_an_open_turn_inherits_completed_turns(store: BaseStore) -> None:
    llm = ScriptedLLM(default="ok")
    parent = await Session.create(store, runtime(llm))
    await parent.send("done turn")
    async with parent.turn("running turn") as turn:
        child = await parent.fork(label="Sub", context="inherit")
        await turn.step()
    assert [m.content for m in await child.messages()] == ["done turn", "ok"]


async def test_turn_left_by_a_dead_writer_is_repaired_by_the_next_turn(store: BaseStore) -> None:
    session = await Session.create(store, runtime(ScriptedLLM()))
    call = {"id": "c1", "name": "search", "arguments": "{}"}
    await store.append(
        session.id,
        [
            make_event("turn/start", {"turn": 1}),
            make_event("user/message", {"content": "q"}),
            make_event("step/start", {"turn": 1, "step": 1}),
            make_event("assistant/message", {"content": "", "tool_calls": [call]}),
            make_event("tool/call", {"call_id": "c1", "name": "search", "arguments": "{}"}),
        ],
    )
    llm = ScriptedLLM(["recovered"])
    reopened = await Session.load(store, session.id, runtime(llm))
    assert await store.read_events(session.id, types=["turn/end"]) == [], "opening only reads"
    await reopened.send("again")  # no lease covers the open turn: its writer is gone, the turn repairs it
    end = (await store.read_events(session.id, types=["turn/end"]))[0]
    assert end.data["reason"] == "interrupted"
    roles = [m.role for m in llm.requests[0].messages]
    assert roles == ["user", "assistant", "tool", "user"]
    assert derive_transcript(await store.read_events(session.id)).messages[2].is_error  # type: ignore[union-attr]


async def test_turn_durability_writes_one_batch(tmp_path: Path) -> None:
    store = MemoryStore()
    llm = ScriptedLLM(default="ok")
    session = await Session.create(store, runtime(llm, durability="turn"))
    before = (await store.get_session(session.id)).next_seq
    await session.send("hi")
    assert (await store.get_session(session.id)).next_seq == before + 7
    check_log(await store.read_events(session.id))


async def test_concurrent_slot_write_from_another_object_is_rebased(store: BaseStore) -> None:
    llm = ScriptedLLM([Delay(seconds=0.2, then="ok")])
    session = await Session.create(store, runtime(llm))
    other = await Session.load(store, session.id, runtime(llm))
    task = asyncio.create_task(session.send("hi"))
    while not llm.requests:
        await asyncio.sleep(0.01)
    await other.put_insight("written meanwhile")
    await task
    events = await store.read_events(session.id)
    check_log(events)
    assert "insight/put" in [e.type for e in events]


async def test_child_opened_from_its_source_in_memory_equals_a_cold_open(store: BaseStore) -> None:
    llm = ScriptedLLM(default="ok")
    parent = await Session.create(store, runtime(llm), label="P", system_prompt="sys")
    for n in range(3):
        await parent.send(f"q{n}")
    warm = await parent.fork(label="Child", context="inherit", prompt="opening")
    await warm.send("child question")
    cold = await Session.load(store, warm.id, runtime(llm))
    assert warm.context() == cold.context()
    assert await warm.messages() == await cold.messages()
    assert (warm.history.cursor, warm.history.slots) == (cold.history.cursor, cold.history.slots)


async def test_a_turn_gives_back_the_lease_it_took_and_keeps_one_held_around_it(store: BaseStore) -> None:
    session = await Session.create(store, runtime(ScriptedLLM(["one", "two", "three"])), label="held")
    await session.send("alone")  # the turn took the lease: its closing write gave it back
    assert session.lease is None and (await store.get_session(session.id)).lease is None
    async with session.hold():
        held = session.lease
        assert held is not None
        await session.send("first")  # a lease held around the turns outlives each of them
        await session.send("second")
        assert session.lease == held
        assert (await store.get_session(session.id)).lease == held
    assert session.lease is None and (await store.get_session(session.id)).lease is None
    assert (await store.get_session(session.id)).turn_count == 3


async def test_each_model_call_is_recorded_after_its_reply_with_its_usage(store: BaseStore) -> None:
    """``model/called`` follows the step's events; a call not streamed has no time to first token."""
    llm = ScriptedLLM([Reply(text="a", usage=Usage(input_tokens=9, output_tokens=2)), "b"], estimate_usage=False)
    session = await Session.create(store, runtime(llm))
    await session.send("one")
    async for _ in session.stream("two"):
        pass
    events = await store.read_events(session.id)
    check_log(events)
    called = [e for e in events if e.type == "model/called"]
    assert [events[e.seq - 1].type for e in called] == ["step/end", "step/end"]
    first, second = (call_usage(e) for e in called)
    assert (first.input_tokens, first.output_tokens, first.ttft_ms) == (9, 2, None)
    assert (second.turn, second.input_tokens, second.output_tokens) == (2, None, None)
    assert second.ttft_ms is not None and first.stop_reason == "stop"
    # Nothing of it reaches the model: the second call saw the first turn's messages only.
    assert [m.content for m in llm.requests[1].messages] == ["one", "a", "two"]
