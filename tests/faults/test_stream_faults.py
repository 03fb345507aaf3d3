"""Break a streamed reply at every point: before text, mid-text, mid-tool-call arguments, after the end.

Whatever the point, the turn either completes (the reply was whole) or fails with the provider's typed error;
then the session equals its store, the log is valid, a fragment the person saw is kept marked as interrupted,
no half-received tool call is recorded or run, and the next turn works.
"""

from __future__ import annotations

import pytest
from fault_support import BreakingLLM, check_consistent, run_turn, streamed

from stellate.engine.events import TurnFinished
from stellate.errors import ProviderError
from stellate.llm import RetryPolicy
from stellate.llm.anthropic import AnthropicAdapter
from stellate.llm.openai import OpenAIAdapter
from stellate.llm.scripted import Reply, tool_call
from stellate.llm.types import ResponseDone, TextDelta, ToolCallDelta
from stellate.log import INTERRUPTED_REPLY_NOTE, AssistantMessage, Event
from stellate.session import Session, SessionRuntime
from stellate.store import BaseStore
from stellate.store.memory import MemoryStore
from stellate.testing.mock_llm import MockLLMServer, MockReply

ASKING = Reply(text="Let me check the weather there.", tool_calls=[tool_call("lookup", {"city": "Leiden"})])
ANSWER = Reply(text="It is mild in Leiden, about fourteen degrees.")


async def check_after_fault(session: Session, store: BaseStore, outcome: object) -> list[Event]:
    """The checks every fault must pass; returns the log as the fault left it."""
    events = await check_consistent(session, store)
    assert not (await store.get_session(session.id)).cursor.turn_open
    if isinstance(outcome, ProviderError):
        end = events[-1]
        assert end.type == "turn/end" and end.data["reason"] == "error"
        assert end.data["error"]["code"] == "provider_error"
    following = await run_turn(session, "And tomorrow?")
    assert isinstance(following, TurnFinished) and following.result.reason == "completed"
    await check_consistent(session, store)
    return events


def interrupted_replies(events: list[Event]) -> list[str]:
    return [e.data["content"] for e in events if e.type == "assistant/message" and e.data.get("interrupted")]


@pytest.mark.parametrize("on_call", [1, 2], ids=["asking-reply", "answer-after-tools"])
async def test_a_stream_broken_at_any_event_leaves_a_valid_session(on_call: int) -> None:
    broken = ASKING if on_call == 1 else ANSWER
    stream = await streamed(broken)
    kinds = [type(e) for e in stream]
    assert TextDelta in kinds and (on_call == 2 or ToolCallDelta in kinds)
    for break_at in range(len(stream) + 1):  # len(stream): after the final ResponseDone
        store = MemoryStore()
        llm = BreakingLLM([ASKING, ANSWER, "Same again."], on_call=on_call, break_at=break_at)
        session = await Session.create(store, SessionRuntime(llm=llm))
        outcome = await run_turn(session, "Weather in Leiden?")
        whole = break_at > kinds.index(ResponseDone)
        assert isinstance(outcome, TurnFinished if whole else ProviderError), f"break at {break_at}: {outcome!r}"
        events = await check_after_fault(session, store, outcome)
        calls = [e for e in events if e.type == "tool/call"]
        assert len(calls) == (0 if on_call == 1 and not whole else 1), f"break at {break_at}"
        text_seen = "".join(e.text for e in stream[:break_at] if isinstance(e, TextDelta))
        if whole or not text_seen:
            assert interrupted_replies(events) == [], f"break at {break_at}"
            continue
        assert interrupted_replies(events) == [text_seen], f"break at {break_at}"
        replayed = [m for m in llm.requests[-1].messages if isinstance(m, AssistantMessage)]
        assert replayed[-1] == AssistantMessage(content=text_seen + INTERRUPTED_REPLY_NOTE)


def http_adapter(api: str, server: MockLLMServer) -> OpenAIAdapter | AnthropicAdapter:
    once = RetryPolicy(max_attempts=1)  # every fault surfaces instead of being retried away
    if api == "openai":
        return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test", retry=once)
    return AnthropicAdapter("claude-mock", base_url=server.url, api_key="sk-test", retry=once)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_connection_dropped_at_any_point_of_a_real_stream_leaves_a_valid_session(api: str) -> None:
    """Over loopback HTTP: the server drops the connection after each SSE event in turn, [DONE] included."""
    call = tool_call("lookup", {"city": "Leiden"}, id="call-leiden")
    outcomes: list[bool] = []
    async with MockLLMServer(handler=lambda _: MockReply(text="Fine.")) as server:
        llm = http_adapter(api, server)
        try:
            while len(outcomes) < 80 and outcomes[-2:] != [True, True]:
                server.push(MockReply(text=ASKING.text, tool_calls=[call], disconnect_after=len(outcomes)))
                store = MemoryStore()
                session = await Session.create(store, SessionRuntime(llm=llm))
                outcome = await run_turn(session, "Weather in Leiden?")
                assert isinstance(outcome, TurnFinished | ProviderError), f"drop at {len(outcomes)}: {outcome!r}"
                events = await check_after_fault(session, store, outcome)
                whole = isinstance(outcome, TurnFinished)
                assert len([e for e in events if e.type == "tool/call"]) == (1 if whole else 0)
                partial = interrupted_replies(events)
                assert partial == [] or (not whole and ASKING.text.startswith(partial[0]))
                outcomes.append(whole)
        finally:
            await llm.aclose()
    complete_from = outcomes.index(True)
    assert complete_from >= 8, "too few fault points: the reply should span text and tool-call arguments"
    assert all(outcomes[complete_from:]), "once the model's reply is whole, a later drop must not fail it"
