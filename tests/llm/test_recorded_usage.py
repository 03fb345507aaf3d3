"""What each provider's reply leaves in the log's ``model/called`` event, through real HTTP on loopback."""

from __future__ import annotations

from typing import Any

from stellate import Agent
from stellate.llm import RetryPolicy, tool_call
from stellate.llm.anthropic import AnthropicAdapter
from stellate.llm.openai import OpenAIAdapter
from stellate.llm.scripted import ScriptedLLM
from stellate.llm.types import LLMAdapter
from stellate.log.usage import CallUsage, call_usage
from stellate.store import SessionId
from stellate.store.memory import MemoryStore
from stellate.testing.mock_llm import MockLLMServer, MockReply

QUICK_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0)


async def recorded_calls(llm: LLMAdapter) -> list[CallUsage]:
    store = MemoryStore()
    async with Agent(store, llm=llm) as agent:
        session = await agent.create_session()
        async for _ in agent.stream(session.id, "hello"):
            pass
        events = await store.read_events(SessionId(session.id), types=("model/called",))
    if isinstance(llm, OpenAIAdapter | AnthropicAdapter):
        await llm.aclose()
    assert all(e.ignorable for e in events)
    return [call_usage(e) for e in events]


def openai(server: MockLLMServer, **options: Any) -> OpenAIAdapter:
    return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test", retry=QUICK_RETRY, **options)


async def test_openai_stream_records_the_reported_usage_and_timings(server: MockLLMServer) -> None:
    server.push(MockReply(text="two words", input_tokens=21, output_tokens=5))
    [call] = await recorded_calls(openai(server))
    assert (call.provider, call.model, call.turn, call.step) == ("openai", "gpt-mock", 1, 1)
    assert (call.input_tokens, call.output_tokens, call.stop_reason) == (21, 5, "stop")
    assert call.ttft_ms is not None and 0 <= call.ttft_ms <= call.latency_ms


async def test_openai_without_stream_usage_records_unknown_tokens_not_zero(server: MockLLMServer) -> None:
    server.push(MockReply(text="no usage here", input_tokens=21, output_tokens=5))
    [call] = await recorded_calls(openai(server, stream_usage=False))
    assert server.requests[-1].body.get("stream_options") is None
    assert call.input_tokens is None and call.output_tokens is None
    assert call.latency_ms >= 0 and call.ttft_ms is not None


async def test_anthropic_stream_records_input_from_start_and_output_from_delta(server: MockLLMServer) -> None:
    server.push(MockReply(text="hi there", input_tokens=33, output_tokens=7))
    llm = AnthropicAdapter("claude-mock", base_url=server.url, api_key="sk-ant-test", retry=QUICK_RETRY)
    [call] = await recorded_calls(llm)
    assert (call.provider, call.model, call.input_tokens, call.output_tokens) == ("anthropic", "claude-mock", 33, 7)
    assert call.stop_reason == "stop" and call.ttft_ms is not None


async def test_a_tool_step_and_the_answer_are_two_calls_with_their_steps(server: MockLLMServer) -> None:
    server.push(MockReply(tool_calls=[tool_call("missing_tool", {}, id="c1")], input_tokens=10), MockReply(text="ok"))
    calls = await recorded_calls(openai(server))
    assert [(c.step, c.stop_reason) for c in calls] == [(1, "tool_calls"), (2, "stop")]
    assert calls[0].ttft_ms is not None  # the first tool-call piece counts as the first token


async def test_scripted_model_reports_unknown_usage_when_asked_to_estimate_nothing() -> None:
    [estimated] = await recorded_calls(ScriptedLLM(["hi"]))
    assert estimated.input_tokens is not None and estimated.input_tokens > 0
    [unknown] = await recorded_calls(ScriptedLLM(["hi"], estimate_usage=False))
    assert unknown.input_tokens is None and unknown.output_tokens is None
