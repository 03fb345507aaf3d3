from __future__ import annotations

import asyncio
import json

import pytest

from stellate.errors import ProviderError, UsageError
from stellate.llm import (
    Delay,
    FunctionLLM,
    LLMAdapter,
    LLMRequest,
    LLMResponse,
    Reply,
    ResponseDone,
    ScriptedLLM,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolSpec,
    Usage,
    UsageReport,
    tool_call,
)
from stellate.log.messages import AssistantMessage, SystemMessage, UserMessage


def ask(text: str = "hi") -> LLMRequest:
    return LLMRequest(messages=[SystemMessage(content="Be brief."), UserMessage(content=text)])


async def collect(llm: LLMAdapter, request: LLMRequest) -> list[StreamEvent]:
    return [event async for event in llm.stream(request)]


def test_deterministic_models_satisfy_the_adapter_protocol() -> None:
    assert isinstance(ScriptedLLM(), LLMAdapter)
    assert isinstance(FunctionLLM(lambda request: "x"), LLMAdapter)


async def test_steps_are_consumed_one_per_call_in_order() -> None:
    llm = ScriptedLLM(["first", "second"])
    assert (await llm.complete(ask())).message.content == "first"
    assert (await llm.complete(ask())).message.content == "second"
    assert llm.remaining == 0


async def test_every_request_is_recorded_streamed_ones_included() -> None:
    llm = ScriptedLLM(["a", "b"])
    first, second = ask("one"), ask("two")
    await llm.complete(first)
    await collect(llm, second)
    assert llm.requests == [first, second]


async def test_reply_carries_tool_calls_and_reports_tool_calls_stop() -> None:
    call = tool_call("search", {"q": "tulips"}, id="call_1")
    response = await ScriptedLLM([Reply(text="Looking.", tool_calls=[call])]).complete(ask())
    assert response.message.tool_calls == (call,)
    assert json.loads(response.message.tool_calls[0].arguments) == {"q": "tulips"}
    assert response.stop_reason == "tool_calls"


async def test_response_names_the_scripted_provider_and_model() -> None:
    response = await ScriptedLLM(["x"], model="demo").complete(ask())
    assert (response.provider, response.model) == ("scripted", "demo")


async def test_scripted_exception_is_raised_by_the_call() -> None:
    llm = ScriptedLLM([ProviderError("rate limited", status_code=429), "after"])
    with pytest.raises(ProviderError, match="rate limited"):
        await llm.complete(ask())
    assert (await llm.complete(ask())).message.content == "after"


async def test_scripted_exception_in_a_stream_comes_before_any_event() -> None:
    llm = ScriptedLLM([ProviderError("down")])
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError):
        async for event in llm.stream(ask()):
            events.append(event)
    assert events == []


async def test_callable_step_receives_the_request() -> None:
    llm = ScriptedLLM([lambda request: f"you said {request.messages[-1].content}"])
    assert (await llm.complete(ask("tulips"))).message.content == "you said tulips"


async def test_callable_step_may_be_async_and_return_another_step() -> None:
    async def answer(request: LLMRequest) -> Reply:
        return Reply(text="async")

    assert (await ScriptedLLM([answer]).complete(ask())).message.content == "async"


async def test_delay_sleeps_before_answering() -> None:
    llm = ScriptedLLM([Delay(seconds=0.05, then="late")])
    started = asyncio.get_running_loop().time()
    response = await llm.complete(ask())
    assert response.message.content == "late"
    assert asyncio.get_running_loop().time() - started >= 0.04


async def test_cancellation_during_a_delay_propagates() -> None:
    llm = ScriptedLLM([Delay(seconds=10, then="never")])
    task = asyncio.create_task(llm.complete(ask()))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_exhausted_script_raises_a_clear_usage_error() -> None:
    llm = ScriptedLLM(["only"])
    await llm.complete(ask())
    with pytest.raises(UsageError, match="script is used up"):
        await llm.complete(ask())


async def test_default_step_repeats_once_the_script_is_used_up() -> None:
    llm = ScriptedLLM(["first"], default="again")
    replies = [(await llm.complete(ask())).message.content for _ in range(3)]
    assert replies == ["first", "again", "again"]


async def test_push_appends_steps() -> None:
    llm = ScriptedLLM()
    llm.push("pushed")
    assert (await llm.complete(ask())).message.content == "pushed"


async def test_stream_yields_text_in_several_deltas_then_calls_usage_and_done() -> None:
    call = tool_call("search", {"q": "tulips in spring"}, id="call_1")
    events = await collect(ScriptedLLM([Reply(text="Let me look that up.", tool_calls=[call])]), ask())
    kinds = [event.type for event in events]
    text_deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(text_deltas) > 1 and "".join(text_deltas) == "Let me look that up."
    assert kinds.index("tool_call_delta") > kinds.index("text_delta")
    assert kinds[-3:] == ["tool_call_done", "usage", "done"]
    arguments = "".join(e.arguments for e in events if isinstance(e, ToolCallDelta))
    assert arguments == call.arguments
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == [call]


async def test_stream_done_holds_the_same_response_as_complete() -> None:
    events = await collect(ScriptedLLM(["Hello there"]), ask())
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message == AssistantMessage(content="Hello there")


async def test_usage_is_estimated_at_four_characters_per_token() -> None:
    request = LLMRequest(messages=[UserMessage(content="x" * 40)])
    response = await ScriptedLLM(["y" * 8]).complete(request)
    assert response.usage is not None
    assert response.usage.output_tokens == 2
    assert response.usage.input_tokens >= 10


async def test_offered_tools_count_towards_estimated_input() -> None:
    tool = ToolSpec(name="search", description="Search the web " * 20, parameters={"type": "object"})
    bare = await ScriptedLLM(["ok"]).complete(ask())
    with_tools = await ScriptedLLM(["ok"]).complete(LLMRequest(messages=ask().messages, tools=[tool]))
    assert bare.usage is not None and with_tools.usage is not None
    assert with_tools.usage.input_tokens > bare.usage.input_tokens + 50


async def test_scripted_usage_overrides_the_estimate() -> None:
    response = await ScriptedLLM([Reply(text="x", usage=Usage(input_tokens=900, output_tokens=7))]).complete(ask())
    assert response.usage == Usage(input_tokens=900, output_tokens=7)
    events = await collect(ScriptedLLM([Reply(text="x", usage=Usage(input_tokens=900, output_tokens=7))]), ask())
    assert [e.usage for e in events if isinstance(e, UsageReport)] == [Usage(input_tokens=900, output_tokens=7)]


async def test_max_context_tokens_is_configurable() -> None:
    assert ScriptedLLM(max_context_tokens=1000).max_context_tokens == 1000


async def test_whole_llm_response_step_is_returned_as_given() -> None:
    given = LLMResponse(message=AssistantMessage(content="raw"), stop_reason="length", provider="p", model="m")
    assert await ScriptedLLM([given]).complete(ask()) is given


async def test_function_llm_answers_with_the_function_and_records_requests() -> None:
    llm = FunctionLLM(lambda request: f"{len(request.messages)} messages")
    request = ask()
    assert (await llm.complete(request)).message.content == "2 messages"
    assert llm.requests == [request]
    assert llm.provider == "function"


async def test_function_llm_accepts_an_async_function_and_streams() -> None:
    async def echo(request: LLMRequest) -> str:
        return str(request.messages[-1].content).upper()

    events = await collect(FunctionLLM(echo), ask("loud words"))
    done = events[-1]
    assert isinstance(done, ResponseDone) and done.response.message.content == "LOUD WORDS"


async def test_function_llm_propagates_what_the_function_raises() -> None:
    def broken(request: LLMRequest) -> str:
        raise ProviderError("boom")

    with pytest.raises(ProviderError, match="boom"):
        await FunctionLLM(broken).complete(ask())


def test_tool_call_keeps_a_string_argument_raw() -> None:
    assert tool_call("f", '{"broken": ', id="c").arguments == '{"broken": '
