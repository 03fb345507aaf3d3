"""Zero-latency models: one for stellate and one for each peer, all answering "ok" and ignoring the input.

Every fake does O(1) work per call whatever the history length, so what grows with history is the
framework's own work. `ScriptedLLM` is not used for stellate because it estimates usage by summing
``chars / 4`` over the whole request (O(history) per call), records every request (memory grows), and
claims an 8,192-token window, so long histories would trigger compression.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

from stellate.llm.scripted import response_events
from stellate.llm.types import LLMRequest, LLMResponse, StreamEvent, Usage
from stellate.log.messages import AssistantMessage

REPLY = "ok"
USER = "hi"


class InstantLLM:
    """A stellate `LLMAdapter` that answers "ok" at once, with a fixed usage report.

    Its window is large enough that no benchmark history ever reaches the compression threshold.
    """

    provider = "bench"
    model = "instant"
    max_context_tokens = 1 << 40

    def _response(self) -> LLMResponse:
        return LLMResponse(
            message=AssistantMessage(content=REPLY),
            usage=Usage(input_tokens=0, output_tokens=1),
            stop_reason="stop",
            provider=self.provider,
            model=self.model,
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._response()

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        for event in response_events(self._response()):
            yield event


class DelayedLLM(InstantLLM):
    """`InstantLLM` answering after ``latency_ms``: the servers' model (B6, B7, the soak).

    Unlike `FunctionLLM` it keeps nothing per call (`FunctionLLM` records every request, so a long run of a
    server grows with every turn it served).
    """

    model = "delayed"

    def __init__(self, latency_ms: float) -> None:
        self.latency = latency_ms / 1000

    async def complete(self, request: LLMRequest) -> LLMResponse:
        await asyncio.sleep(self.latency)
        return self._response()

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self.latency)
        for event in response_events(self._response()):
            yield event


def langgraph_chat_model() -> Any:
    """LangGraph's fake chat model, as in peer-bench.md (it ignores its input)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=[REPLY])


def agents_model() -> Any:
    """An Agents SDK `Model` returning one "ok" output message with a fresh id, as in peer-bench.md."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage as AgentsUsage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class OkModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            message = ResponseOutputMessage(
                id=f"msg_{uuid.uuid4().hex}",
                content=[ResponseOutputText(text=REPLY, type="output_text", annotations=[])],
                role="assistant",
                status="completed",
                type="message",
            )
            return ModelResponse(output=[message], usage=AgentsUsage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            raise NotImplementedError("the benchmark runs without streaming")

    return OkModel()
