"""The OpenAI-compatible adapter, tested through real HTTP against the loopback mock server."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx
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
from stellate.llm.openai import OpenAIAdapter
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply

QUICK_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0)
SEARCH = ToolSpec(name="search", description="Search the web.", parameters={"type": "object", "properties": {}})


def adapter(server: MockLLMServer, **options: Any) -> OpenAIAdapter:
    options.setdefault("retry", QUICK_RETRY)
    options.setdefault("timeout", 5.0)
    return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test", **options)


def ask(*messages: Message, **options: Any) -> LLMRequest:
    return LLMRequest(messages=messages or (UserMessage(content="hi"),), **options)


async def collect(llm: LLMAdapter, request: LLMRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(request)]


def done(events: list[StreamEvent]) -> ResponseDone:
    last = events[-1]
    assert isinstance(last, ResponseDone)
    return last


# -- request shape ---------------------------------------------------------------------------------------------


async def test_consecutive_system_messages_are_merged_with_a_blank_line(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    history = (
        SystemMessage(content="Rule one."),
        SystemMessage(content="Rule two."),
        UserMessage(content="hi"),
        SystemMessage(content="Late note."),
    )
    async with adapter(server) as llm:
        await llm.complete(ask(*history))
    sent = server.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "Rule one.\n\nRule two."}
    assert sent[2] == {"role": "system", "content": "Late note."}


async def test_tools_are_sent_in_function_form(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    async with adapter(server) as llm:
        await llm.complete(ask(tools=[SEARCH]))
    assert server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search the web.", "parameters": SEARCH.parameters},
        }
    ]


async def test_no_tools_key_when_no_tools_are_offered(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    async with adapter(server) as llm:
        await llm.complete(ask())
    assert "tools" not in server.requests[0].body


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


async def test_temperature_is_sent_only_when_set(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"), MockReply(text="ok"))
    async with adapter(server) as llm:
        await llm.complete(ask())
        await llm.complete(ask(temperature=0.2))
    assert "temperature" not in server.requests[0].body
    assert server.requests[1].body["temperature"] == 0.2


async def test_extra_body_is_merged_and_auth_header_sent(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    async with adapter(server, extra_body={"top_p": 0.5, "max_tokens": 7}) as llm:
        await llm.complete(ask())
    request = server.requests[0]
    assert request.body["top_p"] == 0.5 and request.body["max_tokens"] == 7
    assert request.headers["authorization"] == "Bearer sk-test"


async def test_stream_asks_for_a_usage_chunk(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    async with adapter(server) as llm:
        await collect(llm, ask())
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_history_tool_calls_and_results_use_the_openai_shape(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"))
    good = ToolCall(id="c1", name="search", arguments='{"q": "x"}')
    broken = ToolCall(id="c2", name="search", arguments='{"q": ')
    history = (
        UserMessage(content="hi"),
        AssistantMessage(content="", tool_calls=(good, broken)),
        ToolMessage(call_id="c1", name="search", content="found"),
        ToolMessage(call_id="c2", name="search", content="bad arguments", is_error=True),
    )
    async with adapter(server) as llm:
        await llm.complete(ask(*history))
    assistant, first_result = server.requests[0].body["messages"][1:3]
    assert assistant["content"] is None
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ['{"q": "x"}', "{}"]
    assert first_result == {"role": "tool", "tool_call_id": "c1", "content": "found"}


# -- answers ---------------------------------------------------------------------------------------------------


async def test_complete_returns_text_usage_and_stop_reason(server: MockLLMServer) -> None:
    server.push(MockReply(text="Hello there", input_tokens=21, output_tokens=3))
    async with adapter(server) as llm:
        response = await llm.complete(ask())
    assert response.message == AssistantMessage(content="Hello there")
    assert response.usage == Usage(input_tokens=21, output_tokens=3)
    assert (response.stop_reason, response.provider, response.model) == ("stop", "openai", "gpt-mock")


async def test_complete_returns_tool_calls_with_raw_arguments(server: MockLLMServer) -> None:
    call = tool_call("search", {"q": "tulips"}, id="call_9")
    server.push(MockReply(tool_calls=[call]))
    async with adapter(server) as llm:
        response = await llm.complete(ask(tools=[SEARCH]))
    assert response.message.tool_calls == (call,)
    assert response.stop_reason == "tool_calls"


async def test_stream_yields_text_deltas_then_usage_then_done(server: MockLLMServer) -> None:
    server.push(MockReply(text="One two three", input_tokens=5, output_tokens=4))
    async with adapter(server) as llm:
        events = await collect(llm, ask())
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["One ", "two ", "three"]
    assert [e.type for e in events][-2:] == ["usage", "done"]
    assert [e.usage for e in events if isinstance(e, UsageReport)] == [Usage(input_tokens=5, output_tokens=4)]
    assert done(events).response.message.content == "One two three"


async def test_streamed_parallel_tool_calls_are_assembled_by_index(server: MockLLMServer) -> None:
    calls = [tool_call("search", {"q": "tulips"}, id="a"), tool_call("weather", {"city": "Leiden"}, id="b")]
    server.push(MockReply(tool_calls=calls, quirks=True))  # quirks interleave the argument pieces
    async with adapter(server) as llm:
        events = await collect(llm, ask(tools=[SEARCH]))
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == calls
    assert {e.index for e in events if isinstance(e, ToolCallDelta)} == {0, 1}
    response = done(events).response
    assert response.message.tool_calls == tuple(calls) and response.stop_reason == "tool_calls"


async def test_null_choices_null_deltas_and_usage_only_chunks_are_tolerated(server: MockLLMServer) -> None:
    server.push(MockReply(text="still fine", quirks=True, input_tokens=3, output_tokens=2))
    async with adapter(server) as llm:
        events = await collect(llm, ask())
    assert done(events).response.message.content == "still fine"
    assert done(events).response.usage == Usage(input_tokens=3, output_tokens=2)


async def test_truncated_tool_json_is_passed_raw_with_length_stop(server: MockLLMServer) -> None:
    call = tool_call("search", {"query": "a long query about tulips"}, id="t1")
    server.push(MockReply(tool_calls=[call], truncate_tool_arguments=True))
    async with adapter(server) as llm:
        events = await collect(llm, ask(tools=[SEARCH]))
    (streamed,) = done(events).response.message.tool_calls
    assert streamed.arguments == call.arguments[: len(call.arguments) // 2]
    with pytest.raises(ValueError):
        json.loads(streamed.arguments)
    assert done(events).response.stop_reason == "length"


async def test_malformed_tool_json_in_a_whole_answer_is_passed_raw(server: MockLLMServer) -> None:
    server.push(MockReply(tool_calls=[ToolCall(id="t", name="search", arguments='{"q": "tul')]))
    async with adapter(server) as llm:
        response = await llm.complete(ask(tools=[SEARCH]))
    assert response.message.tool_calls[0].arguments == '{"q": "tul'


async def test_answer_without_choices_is_a_provider_error() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"choices": None}))
    async with OpenAIAdapter("m", base_url="http://llm.invalid/v1", transport=transport) as llm:
        with pytest.raises(ProviderError, match="without any choice"):
            await llm.complete(ask())


# -- failures and retries --------------------------------------------------------------------------------------


async def test_429_is_retried_after_retry_after(server: MockLLMServer) -> None:
    server.push(MockFailure(status=429, message="slow down", retry_after=0.02), MockReply(text="ok"))
    async with adapter(server) as llm:
        started = asyncio.get_running_loop().time()
        response = await llm.complete(ask())
    assert response.message.content == "ok" and len(server.requests) == 2
    assert asyncio.get_running_loop().time() - started >= 0.02


async def test_persistent_500_raises_provider_error_with_status_and_message(server: MockLLMServer) -> None:
    server.push(*[MockFailure(status=500, message="kaput")] * 3)
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await llm.complete(ask())
    assert caught.value.details["status_code"] == 500
    assert caught.value.details["provider_message"] == "kaput"
    assert len(server.requests) == 3


async def test_400_is_not_retried(server: MockLLMServer) -> None:
    server.push(MockFailure(status=400, message="bad request"), MockReply(text="never"))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await collect(llm, ask())
    assert caught.value.details["status_code"] == 400 and len(server.requests) == 1


async def test_stream_failing_before_output_is_retried(server: MockLLMServer) -> None:
    server.push(MockReply(text="lost", disconnect_after=1), MockReply(text="second try"))
    async with adapter(server) as llm:
        events = await collect(llm, ask())
    assert done(events).response.message.content == "second try"
    assert len(server.requests) == 2


async def test_stream_broken_after_output_raises_and_is_not_retried(server: MockLLMServer) -> None:
    server.push(MockReply(text="one two three four", disconnect_after=3), MockReply(text="never"))
    seen: list[StreamEvent] = []
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            async for event in llm.stream(ask()):
                seen.append(event)
    assert [e.type for e in seen] == ["text_delta", "text_delta"]
    assert caught.value.details["partial_output"] is True and len(server.requests) == 1


async def test_an_empty_stream_shows_the_providers_own_error_once(server: MockLLMServer) -> None:
    """llama.cpp answers an overlong prompt with 200 and an empty stream; the unstreamed call says why."""
    server.push(MockFailure.context_overflow(window=2048), MockFailure.context_overflow(window=2048))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await collect(llm, ask())
    assert caught.value.code == "context_overflow"
    assert "maximum context length is 2048 tokens" in caught.value.message
    assert caught.value.details["status_code"] == 400 and caught.value.details["attempts"] == 1
    assert [r.stream for r in server.requests] == [True, False]  # no retries: the error is final


async def test_an_empty_stream_whose_unstreamed_call_answers_yields_that_answer(server: MockLLMServer) -> None:
    server.push(MockFailure(status=500, empty_stream=True), MockReply(text="answered whole"))
    async with adapter(server) as llm:
        events = await collect(llm, ask())
    assert done(events).response.message.content == "answered whole"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "answered whole"
    assert [r.stream for r in server.requests] == [True, False]


async def test_a_400_naming_the_context_window_is_a_context_overflow(server: MockLLMServer) -> None:
    server.push(MockFailure(status=400, message="This model's maximum context length is 8192 tokens."))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await llm.complete(ask())
    assert caught.value.code == "context_overflow" and "context_tokens" in caught.value.message


async def test_other_400s_stay_provider_errors(server: MockLLMServer) -> None:
    server.push(MockFailure(status=400, message="unknown model"))
    async with adapter(server) as llm:
        with pytest.raises(ProviderError) as caught:
            await llm.complete(ask())
    assert caught.value.code == "provider_error"


async def test_dropped_connection_without_answer_is_retried(server: MockLLMServer) -> None:
    server.push(MockReply(disconnect_after=0), MockReply(text="ok"))
    async with adapter(server) as llm:
        assert (await llm.complete(ask())).message.content == "ok"


async def test_slow_first_byte_times_out_and_is_retried(server: MockLLMServer) -> None:
    server.push(MockReply(text="too late", first_byte_delay=1.0), MockReply(text="ok"))
    async with adapter(server, timeout=0.2) as llm:
        events = await collect(llm, ask())
    assert done(events).response.message.content == "ok"


async def test_cancellation_propagates_without_retrying(server: MockLLMServer) -> None:
    server.push(MockReply(text="slow", first_byte_delay=5.0), MockReply(text="never"))
    async with adapter(server) as llm:
        task = asyncio.create_task(llm.complete(ask()))
        while not server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(server.requests) == 1


async def test_unreachable_server_raises_provider_error() -> None:
    async with MockLLMServer() as server:
        url = server.openai_base_url
    llm = OpenAIAdapter("gpt-mock", base_url=url, api_key="k", retry=QUICK_RETRY)
    async with llm:
        with pytest.raises(ProviderError) as caught:
            await llm.complete(ask())
    assert caught.value.details["status_code"] is None and caught.value.details["attempts"] == 3


async def test_injected_client_is_used_and_left_open() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        async with OpenAIAdapter("m", base_url="http://llm.invalid/v1", client=client) as llm:
            assert (await llm.complete(ask())).message.content == "hi"
        assert not client.is_closed
    assert str(seen[0].url) == "http://llm.invalid/v1/chat/completions"


# -- connection reuse and the cached wire form ---------------------------------------------------------------


async def test_streamed_calls_reuse_one_pooled_connection(server: MockLLMServer) -> None:
    server.push(*[MockReply(text=f"answer {i}") for i in range(10)])
    async with adapter(server) as llm:
        for i in range(10):
            assert done(await collect(llm, ask())).response.message.content == f"answer {i}"
    assert len(server.requests) == 10 and server.connections == 1


async def test_stream_still_reuses_the_connection_after_a_broken_stream(server: MockLLMServer) -> None:
    server.push(MockReply(text="one two", disconnect_after=0), MockReply(text="ok"), MockReply(text="again"))
    async with adapter(server) as llm:
        assert done(await collect(llm, ask())).response.message.content == "ok"
        assert done(await collect(llm, ask())).response.message.content == "again"
    assert server.connections == 2  # the dropped one, then one for both answers


def test_unchanged_messages_are_converted_once_and_bodies_stay_exact() -> None:
    llm = OpenAIAdapter("m", base_url="http://llm.invalid/v1", api_key="k")
    call = ToolCall(id="c1", name="search", arguments='{"q": "x"}')
    history: list[Message] = [
        UserMessage(content="hi"),
        AssistantMessage(content="", tool_calls=(call,)),
        ToolMessage(call_id="c1", name="search", content="found"),
        AssistantMessage(content="done"),
    ]
    first = llm.build_body(ask(SystemMessage(content="a"), SystemMessage(content="b"), *history), stream=True)
    second = llm.build_body(ask(SystemMessage(content="a"), *history, UserMessage(content="next")), stream=True)
    assert all(a is b for a, b in zip(first["messages"][1:], second["messages"][1:5], strict=True))
    assert first["messages"][0] == {"role": "system", "content": "a\n\nb"}
    assert second["messages"][0] == {"role": "system", "content": "a"}  # the merged text did not leak into a cache
    fresh = OpenAIAdapter("m", base_url="http://llm.invalid/v1", api_key="k")
    copies = [SystemMessage(content="a"), *[replace(m) for m in history], UserMessage(content="next")]
    assert second == fresh.build_body(ask(*copies), stream=True)
