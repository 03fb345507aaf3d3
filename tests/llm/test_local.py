"""Smoke test against a real model: SmolLM2-135M run by llama.cpp (extra ``local``). Structure only, not content."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from stellate.llm import LLMRequest, ResponseDone, StreamEvent, TextDelta
from stellate.log.messages import SystemMessage, UserMessage


async def test_local_model_streams_and_completes_a_well_formed_reply(
    require_extra: Callable[[str, str], ModuleType],
) -> None:
    local = require_extra("stellate.llm.local", "local")
    request = LLMRequest(
        messages=[SystemMessage(content="Answer in one short sentence."), UserMessage(content="Name a colour.")],
        max_output_tokens=12,
        temperature=0.0,
    )
    async with local.LlamaCppAdapter(n_ctx=512, n_threads=2) as llm:
        events: list[StreamEvent] = [event async for event in llm.stream(request)]
        response = await llm.complete(request)

    streamed = events[-1]
    assert isinstance(streamed, ResponseDone)
    assert sum(isinstance(e, ResponseDone) for e in events) == 1
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text and text == streamed.response.message.content
    assert streamed.response.stop_reason in ("stop", "length")
    assert (streamed.response.provider, llm.max_context_tokens) == ("local", 512)
    assert response.message.content and response.message.tool_calls == ()
    assert response.usage is not None and response.usage.input_tokens > 0
    assert 0 < response.usage.output_tokens <= 12
