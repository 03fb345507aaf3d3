"""Adapter for OpenAI-compatible chat-completions servers, over raw httpx.

One code path serves OpenAI, DeepSeek, vLLM, Ollama and llama.cpp servers: no SDK, whose majors churn and whose
transport changed under its users (see DESIGN.md §1 and the ecosystem notes on httpx2).
"""

from __future__ import annotations

try:
    import httpx
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/llm/test_registry.py
    raise ImportError('the OpenAI-compatible adapter needs httpx: pip install "stellate[openai]"') from exc

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any, Literal

from stellate.llm._chat_completions import (
    ChunkAssembler,
    EncodedMessages,
    message_to_wire,
    parse_completion,
    to_response_format,
    to_wire_messages,
    to_wire_tools,
)
from stellate.llm._http import HTTPChannel
from stellate.llm._identity import ClosingAdapter
from stellate.llm._retry import AttemptFailed, RetryPolicy, retry_call, retry_stream
from stellate.llm._wire import RawJSON, WireCache, encode_object, resolve_max_tokens
from stellate.llm.scripted import response_events
from stellate.llm.types import LLMRequest, LLMResponse, StreamEvent

__all__ = ["OpenAIAdapter"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIAdapter(ClosingAdapter):
    """`LLMAdapter` for any server speaking OpenAI's ``/chat/completions``.

    Example:
        ``OpenAIAdapter("deepseek-chat", base_url="https://api.deepseek.com/v1", max_context_tokens=64_000)``

    Args:
        model: Model name sent to the server and recorded on replies.
        base_url: Root of the API, ``/v1`` included.
        api_key: Bearer token; defaults to ``$OPENAI_API_KEY``, and no header is sent when neither is set
            (local servers).
        max_context_tokens: The model's context window.
        max_output_tokens: Output cap when a request sets none; `DEFAULT_MAX_OUTPUT_TOKENS` otherwise.
        max_tokens_field: Body field of the cap; OpenAI's reasoning models want ``max_completion_tokens``.
        extra_body: Merged into every request body after the standard fields (it may override them).
        stream_usage: Ask for a usage chunk at the end of streams (``stream_options.include_usage``).
        native_output: Send structured-output requests as ``response_format`` (JSON schema); turn it off for
            servers that lack it, and structured output falls back to a tool call.
        provider: Name recorded on replies (``openai``, ``deepseek``, ``vllm``...).
        timeout: Seconds, or an `httpx.Timeout`; while streaming it bounds the wait for each chunk.
        retry: Retry policy for 429, 5xx, timeouts and dropped connections.
        client: An `httpx.AsyncClient` to use (and not close); one is created otherwise.
        transport: A transport for the client this adapter creates (tests).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        max_context_tokens: int = 128_000,
        max_output_tokens: int | None = None,
        max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
        stream_usage: bool = True,
        native_output: bool = True,
        provider: str = "openai",
        timeout: float | httpx.Timeout = 60.0,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(provider=provider, model=model, max_context_tokens=max_context_tokens)
        self._max_output_tokens = max_output_tokens
        self._max_tokens_field = max_tokens_field
        self._extra_body = dict(extra_body or {})
        self._stream_usage = stream_usage
        self._native_output = native_output
        self._retry = retry or RetryPolicy()
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._channel = HTTPChannel(base_url, headers=headers, timeout=timeout, client=client, transport=transport)
        # A session sends its transcript again on every call: convert each message once, not once per call.
        self._wire_cache: WireCache[dict[str, Any]] = WireCache(message_to_wire)  # for build_body only
        # What is sent: the transcript's encoded JSON, built from each message's bytes encoded once.
        self._encoded = EncodedMessages()

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._channel.aclose()

    @property
    def base_url(self) -> str:
        """The API root this adapter calls (shown by the server's capabilities and the devtools UI)."""
        return self._channel.base_url

    def supports_native_output(self) -> bool:
        """Whether structured output is sent as ``response_format`` (see ``native_output``)."""
        return self._native_output

    def build_body(self, request: LLMRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body sent for ``request`` (public so that applications can log or inspect it).

        The message dicts are shared with later calls' bodies: read them, do not modify them.
        """
        return self._body(request, to_wire_messages(request.messages, self._wire_cache), stream=stream)

    def encode_body(self, request: LLMRequest, *, stream: bool) -> bytes:
        """The bytes sent for ``request``: `build_body`'s dict as compact UTF-8 JSON.

        The transcript is not encoded again on each call: each message's JSON is cached, and so is the array of
        the previous call, which a session's next call extends.
        """
        return encode_object(self._body(request, RawJSON(self._encoded.encode(request.messages)), stream=stream))

    def _body(self, request: LLMRequest, messages: object, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            self._max_tokens_field: resolve_max_tokens(request, self._max_output_tokens),
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = to_wire_tools(request.tools)
        if request.output is not None and self._native_output:
            body["response_format"] = to_response_format(request.output)
        body.update(self._extra_body)
        body["stream"] = stream
        if stream and self._stream_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    def _context(self) -> dict[str, str]:
        return {"provider": self._provider, "model": self._model}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Make one non-streamed call.

        Raises:
            ProviderError: The server kept failing, refused the request, or answered without a choice.
        """
        body = self.encode_body(request, stream=False)

        async def attempt() -> LLMResponse:
            data = await self._channel.post_json("/chat/completions", body)
            return parse_completion(data, provider=self._provider, model=self._model)

        return await retry_call(self._retry, attempt, context=self._context())

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Make one streamed call; the last event is a `ResponseDone`.

        A stream that ends before any output and before the model finished is asked again unstreamed (see
        `_stream_once`), so the caller gets the provider's own error or its answer.

        Raises:
            ProviderError: The server kept failing before any output, or the stream broke after output started;
                code ``context_overflow`` when it refused the prompt as too long for the model.
        """
        body = self.encode_body(request, stream=True)
        return retry_stream(
            self._retry,
            lambda: self._stream_once(body, lambda: self.encode_body(request, stream=False)),
            context=self._context(),
        )

    async def _stream_once(self, body: bytes, unstreamed: Callable[[], bytes]) -> AsyncGenerator[StreamEvent, None]:
        assembler = ChunkAssembler(provider=self._provider, model=self._model)
        started = done = False
        # aclosing: leaving at [DONE] closes the channel's stream now, which reads the answer to its end and
        # returns the connection to the pool (left to the garbage collector, the connection was dropped).
        async with aclosing(self._channel.stream_sse("/chat/completions", body)) as events:
            async for event in events:
                if event.data.strip() == "[DONE]":
                    done = True
                    break
                for item in assembler.feed(_load_chunk(event.data)):
                    started = True
                    yield item
        if not started and not assembler.has_finish_reason:
            # llama.cpp's server fails a request it has already answered 200 (a prompt over its context window)
            # by ending the stream empty; the same request unstreamed gets the error it has to say, once.
            for item in await self._complete_once(unstreamed()):
                yield item
            return
        # Some servers omit [DONE]; a finish_reason is then proof enough that the model finished.
        if not done and not assembler.has_finish_reason:
            raise AttemptFailed("stream ended before the model finished", retryable=True)
        for item in assembler.finish():
            yield item

    async def _complete_once(self, body: bytes) -> list[StreamEvent]:
        data = await self._channel.post_json("/chat/completions", body)
        return response_events(parse_completion(data, provider=self._provider, model=self._model))


def _load_chunk(data: str) -> Mapping[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise AttemptFailed(f"malformed stream chunk: {data[:200]!r}", retryable=True) from exc
    if not isinstance(chunk, dict):
        return {}
    error = chunk.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise AttemptFailed(f"error in stream: {message}", retryable=False, provider_message=str(message))
    return chunk
