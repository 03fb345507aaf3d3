"""The Anthropic adapter, tested through real HTTP against the loopback mock server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from stellate.errors import ProviderError
from stellate.llm import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    LLMAdapter,
    LLMRequest,
    ResponseDone,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolSpec,
    Usage,
    UsageReport,
    tool_call,
)
from stellate.llm.anthropic import API_VERSION, AnthropicAdapter, MessageAssembler
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply

QUICK_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0)
SEARCH = ToolSpec(name="search", description="Search the web.", parameters={"type": "object", "properties": {}})


def adapter(server: MockLLMServer, **options: Any) -> AnthropicAdapter:
    options.setdefault("retry", QUICK_RETRY)
    options.setdefault("timeout", 5.0)
    return AnthropicAdapter("claude-mock", base_url=server.url, api_key="sk-ant-test", **options)


def ask(*messages: Message, **options: Any) -> LLMRequest:
    return LLMRequest(messages=messages or (UserMessage(content="hi"),), **options)


async def collect(llm: LLMAdapter, request: LLMRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(request)]


def done(events: list[StreamEvent]) -> ResponseDone:
    last = events[-1]
    assert isinstance(last, ResponseDone)
    return last


# -- request shape ---------------------------------------------------------------------------------------------


async def test_all_system_messages_are_joined_into_the_system_parameter(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    history = (SystemMessage(content="One."), UserMessage(content="hi"), SystemMessage(content="Two."))
    async with adapter(server) as llm:
        await llm.complete(ask(*history))
    body = server.requests[0].body
    assert body["system"] == "One.\n\nTwo."
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_api_key_and_version_headers_are_sent(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    async with adapter(server) as llm:
        await llm.complete(ask())
    headers = server.requests[0].headers
    assert headers["x-api-key"] == "sk-ant-test" and headers["anthropic-version"] == API_VERSION


async def test_assistant_tool_calls_become_tool_use_blocks_with_parsed_input(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    calls = (ToolCall(id="c1", name="search", arguments='{"q": "x"}'), ToolCall(id="c2", name="search", arguments="{"))
    history = (
        UserMessage(content="hi"),
        AssistantMessage(content="Looking.", tool_calls=calls),
        ToolMessage(call_id="c1", name="search", content="found"),
        ToolMessage(call_id="c2", name="search", content="bad arguments", is_error=True),
    )
    async with adapter(server) as llm:
        await llm.complete(ask(*history))
    assistant = server.requests[0].body["messages"][1]
    assert assistant["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "c1", "name": "search", "input": {"q": "x"}},
        {"type": "tool_use", "id": "c2", "name": "search", "input": {}},
    ]


async def test_consecutive_tool_results_merge_into_one_user_message(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    calls = (ToolCall(id="c1", name="a", arguments="{}"), ToolCall(id="c2", name="b", arguments="{}"))
    history = (
        UserMessage(content="hi"),
        AssistantMessage(tool_calls=calls),
        ToolMessage(call_id="c1", name="a", content="one"),
        ToolMessage(call_id="c2", name="b", content="two", is_error=True),
    )
    async with adapter(server) as llm:
        await llm.complete(ask(*history))
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "one", "is_error": False},
        {"type": "tool_result", "tool_use_id": "c2", "content": "two", "is_error": True},
    ]


async def test_tools_use_input_schema_and_are_omitted_when_empty(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"), MockReply(text="ok"))
    async with adapter(server) as llm:
        await llm.complete(ask(tools=[SEARCH]))
        await llm.complete(ask())
    assert server.requests[0].body["tools"] == [
        {"name": "search", "description": "Search the web.", "input_schema": SEARCH.parameters}
    ]
    assert "tools" not in server.requests[1].body


@pytest.mark.parametrize(
    ("request_cap", "adapter_cap", "expected"),
    [(None, None, DEFAULT_MAX_OUTPUT_TOKENS), (None, 300, 300), (50, 300, 50)],
)
async def test_max_tokens_prefers_request_then_adapter_then_default(
    server: MockLLMServer, request_cap: int | None, adapter_cap: int | None, expected: int
) -> None:
    server.push(MockReply(text="ok"), MockReply(text="ok"))
    async with adapter(server, max_output_tokens=adapter_cap) as llm:
        await llm.complete(ask(max_output_tokens=request_cap))
        await collect(llm, ask(max_output_tokens=request_cap))
    assert [r.body["max_tokens"] for r in server.requests] == [expected, expected]


# -- answers ---------------------------------------------------------------------------------------------------


async def test_complete_returns_text_tool_calls_usage_and_stop_reason(server: MockLLMServer) -> None:
    call = tool_call("search", {"q": "tulips"}, id="toolu_1")
    server.push(MockReply(text="Let me check.", tool_calls=[call], input_tokens=30, output_tokens=9))
    async with adapter(server) as llm:
        response = await llm.complete(ask(tools=[SEARCH]))
    assert response.message.content == "Let me check."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.message.tool_calls] == [
        ("toolu_1", "search", {"q": "tulips"})
    ]
    assert response.usage == Usage(input_tokens=30, output_tokens=9)
    assert (response.stop_reason, response.provider, response.model) == ("tool_calls", "anthropic", "claude-mock")


async def test_stream_maps_text_and_tool_events_and_usage(server: MockLLMServer) -> None:
    call = tool_call("search", {"q": "tulips"}, id="toolu_1")
    server.push(MockReply(text="Let me check.", tool_calls=[call], input_tokens=30, output_tokens=9))
    async with adapter(server) as llm:
        events = await collect(llm, ask(tools=[SEARCH]))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check."
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (deltas[0].index, deltas[0].id, deltas[0].name, deltas[0].arguments) == (0, "toolu_1", "search", "")
    assert "".join(d.arguments for d in deltas) == call.arguments
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == [call]
    assert [e.usage for e in events if isinstance(e, UsageReport)] == [Usage(input_tokens=30, output_tokens=9)]
    response = done(events).response
    assert response.message.tool_calls == (call,) and response.stop_reason == "tool_calls"


async def test_truncated_tool_json_is_passed_raw_with_length_stop(server: MockLLMServer) -> None:
    call = tool_call("search", {"query": "a long query about tulips"}, id="toolu_1")
    server.push(MockReply(tool_calls=[call], truncate_tool_arguments=True))
    async with adapter(server) as llm:
        events = await collect(llm, ask(tools=[SEARCH]))
    response = done(events).response
    assert response.message.tool_calls[0].arguments == call.arguments[: len(call.arguments) // 2]
    assert response.stop_reason == "length"


def test_stream_error_event_for_an_overload_is_retryable() -> None:
    from stellate.llm._retry import AttemptFailed

    assembler = MessageAssembler(provider="anthropic", model="m")
    with pytest.raises(AttemptFailed) as caught:
        assembler.feed({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert caught.value.retryable and caught.value.provider_message == "Overloaded"


def test_tool_call_without_input_deltas_gets_empty_object_arguments() -> None:
    assembler = MessageAssembler(provider="anthropic", model="m")
    start = {"type": "tool_use", "id": "t", "name": "now", "input": {}}
    assembler.feed({"type": "content_block_start", "index": 0, "content_block": start})
    (event,) = assembler.feed({"type": "content_block_stop", "index": 0})
    assert isinstance(event, ToolCallDone) and event.call.arguments == "{}"


# -- failures and retries --------------------------------------------------------------------------------------


async def test_overloaded_529_is_retried(server: MockLLMServer) -> None:
    server.push(MockFailure(status=529, message="Overloaded"), MockReply(text="ok"))
    async with adapter(server) as llm:
        events = await collect(llm, ask())
    assert done(events).response.message.content == "ok" and len(server.requests) == 2


async def test_rate_limit_exhausted_raises_provider_error_with_provider_message(server: MockLLMServer) -> None:
    server.push(*[MockFailure(status=429, message="Too many", retry_after=0.01)] * 3)
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await llm.complete(ask())
    assert caught.value.details["status_code"] == 429
    assert caught.value.details["provider_message"] == "Too many"
    assert caught.value.details["provider"] == "anthropic"


async def test_invalid_request_is_not_retried(server: MockLLMServer) -> None:
    server.push(MockFailure(status=400, message="messages: empty"), MockReply(text="never"))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError, match="messages: empty"):
            await llm.complete(ask())
    assert len(server.requests) == 1


async def test_stream_broken_after_output_raises_and_is_not_retried(server: MockLLMServer) -> None:
    server.push(MockReply(text="one two three", disconnect_after=5), MockReply(text="never"))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError):
            await collect(llm, ask())
    assert len(server.requests) == 1


async def test_cancelled_stream_propagates_without_retrying(server: MockLLMServer) -> None:
    server.push(MockReply(text="slow", first_byte_delay=5.0), MockReply(text="never"))
    async with adapter(server) as llm:
        task = asyncio.create_task(collect(llm, ask()))
        while not server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(server.requests) == 1


async def test_streamed_calls_reuse_one_pooled_connection(server: MockLLMServer) -> None:
    server.push(*[MockReply(text=f"answer {i}") for i in range(10)])
    async with adapter(server) as llm:
        for i in range(10):
            assert done(await collect(llm, ask())).response.message.content == f"answer {i}"
    assert len(server.requests) == 10 and server.connections == 1


def test_unchanged_messages_are_converted_once_and_merges_do_not_leak_into_the_cache() -> None:
    llm = AnthropicAdapter("claude-mock", api_key="k")
    call = ToolCall(id="t1", name="search", arguments='{"q": "x"}')
    history: list[Message] = [
        UserMessage(content="hi"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(call_id="t1", name="search", content="found"),
    ]
    first = llm.build_body(ask(*history, UserMessage(content="and?")), stream=True)
    second = llm.build_body(ask(*history, UserMessage(content="more")), stream=True)
    assert first["messages"][1]["content"][0] is second["messages"][1]["content"][0]
    assert len(first["messages"][2]["content"]) == 2  # the tool result and the next text, merged into one turn
    assert second["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "found", "is_error": False},
        {"type": "text", "text": "more"},
    ]
