"""Adapter for Anthropic's Messages API (``/v1/messages``), over raw httpx.

Anthropic differs from the chat-completions shape in three ways that matter here: system text is a separate
``system`` parameter, tool calls and results are content blocks (``tool_use`` / ``tool_result``) and results
travel in a ``user`` message, and streams are typed events
(https://docs.anthropic.com/en/api/messages-streaming).
"""

from __future__ import annotations

try:
    import httpx
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/llm/test_registry.py
    raise ImportError('the Anthropic adapter needs httpx: pip install "stellate[anthropic]"') from exc

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from stellate.llm._http import HTTPChannel
from stellate.llm._identity import ClosingAdapter
from stellate.llm._retry import AttemptFailed, RetryPolicy, retry_call, retry_stream
from stellate.llm._wire import (
    UNKNOWN_TOOL,
    WireCache,
    dump_json,
    new_call_id,
    parse_tool_arguments,
    resolve_max_tokens,
)
from stellate.llm.images import image_base64
from stellate.llm.types import (
    LLMRequest,
    LLMResponse,
    ResponseDone,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolSpec,
    Usage,
    UsageReport,
)
from stellate.log.images import ImageRef
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage

__all__ = [
    "AnthropicAdapter",
    "MessageAssembler",
    "map_stop_reason",
    "message_blocks",
    "parse_message",
    "parse_usage",
    "to_wire_messages",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def map_stop_reason(reason: object) -> StopReason:
    """Map Anthropic's ``stop_reason`` onto `StopReason`."""
    return _STOP_REASONS.get(reason, "unknown") if isinstance(reason, str) else "unknown"


def to_wire_messages(
    messages: Sequence[Message], cache: WireCache[tuple[str, list[dict[str, Any]]]] | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """Split messages into the ``system`` parameter and the ``messages`` list.

    All system messages, wherever they stand, are joined with a blank line. Consecutive messages of one role are
    merged, so a run of tool results becomes one ``user`` message of ``tool_result`` blocks. With ``cache``, a
    message object already converted for an earlier call is not converted again.
    """
    system = [m.content for m in messages if isinstance(m, SystemMessage)]
    others = [m for m in messages if not isinstance(m, SystemMessage)]
    wire: list[dict[str, Any]] = []
    for role, blocks in cache.convert_all(others) if cache is not None else map(message_blocks, others):
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": list(blocks)})  # a copy: the cached list stays as it is
    for entry in wire:
        blocks = entry["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            entry["content"] = blocks[0]["text"]
    return ("\n\n".join(system) if system else None), wire


def message_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """The role and content blocks of one non-system message (tool results travel as ``user`` blocks)."""
    if isinstance(message, ToolMessage):
        content: str | list[dict[str, Any]] = message.content
        if message.images:  # a tool result may hold image blocks beside its text
            content = [{"type": "text", "text": message.content}, *map(_image_block, message.images)]
        block = {
            "type": "tool_result",
            "tool_use_id": message.call_id,
            "content": content,
            "is_error": message.is_error,
        }
        return "user", [block]
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message)
    images = message.images if isinstance(message, UserMessage) else ()
    # Images first: Anthropic's guidance is that a question after its images is answered best.
    return "user", [*map(_image_block, images), {"type": "text", "text": message.content}]


def _image_block(image: ImageRef) -> dict[str, Any]:
    source = {"type": "base64", "media_type": image.media_type, "data": image_base64(image)}
    return {"type": "image", "source": source}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    # The API refuses empty text blocks; derived transcripts never hold an empty assistant message anyway.
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    for call in message.tool_calls:
        # Malformed arguments stay raw in the log; the API needs an object, and the tool result explains the rest.
        arguments = parse_tool_arguments(call.arguments) or {}
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _tools_to_wire(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


def parse_message(data: Mapping[str, Any], *, provider: str, model: str) -> LLMResponse:
    """Parse a non-streamed ``message`` object."""
    blocks = [b for b in data.get("content") or () if isinstance(b, Mapping)]
    text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
    calls = tuple(
        ToolCall(
            id=str(b.get("id") or new_call_id()),
            name=str(b.get("name") or UNKNOWN_TOOL),
            arguments=json.dumps(b.get("input") or {}),
        )
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return LLMResponse(
        message=AssistantMessage(content=text, tool_calls=calls),
        usage=parse_usage(data.get("usage")),
        stop_reason=map_stop_reason(data.get("stop_reason")),
        provider=provider,
        model=model,
    )


def parse_usage(data: object) -> Usage | None:
    """Usage from an Anthropic ``usage`` object, or ``None`` when there is none."""
    if not isinstance(data, Mapping):
        return None
    # Cached prompt tokens are billed apart but still fill the context window.
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return Usage(
        input_tokens=sum(int(data.get(key) or 0) for key in keys), output_tokens=int(data.get("output_tokens") or 0)
    )


@dataclass(slots=True)
class _ToolBlock:
    ordinal: int
    id: str
    name: str
    parts: list[str] = field(default_factory=list)
    closed: bool = False

    def build(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments="".join(self.parts) or "{}")


class MessageAssembler:
    """Turns Messages-API stream events into our stream events, then into the final response.

    Tool calls are numbered 0, 1, 2... in order of appearance, whatever their content-block index.
    """

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._text: list[str] = []
        self._tools: dict[int, _ToolBlock] = {}
        self._usage: Usage | None = None
        self._stop_reason: str | None = None
        self.is_complete = False
        """Whether ``message_stop`` arrived."""

    @property
    def has_stop_reason(self) -> bool:
        """Whether the model said why it stopped: the reply is whole even if ``message_stop`` was lost."""
        return self._stop_reason is not None

    def feed(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        """Absorb one stream event and return the events it produces.

        Raises:
            AttemptFailed: The event is an ``error`` event.
        """
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self._merge_usage(message.get("usage"))
        elif kind == "content_block_start":
            return self._start_block(event)
        elif kind == "content_block_delta":
            return self._extend_block(event)
        elif kind == "content_block_stop":
            return self._close_block(event)
        elif kind == "message_delta":
            self._finish_message(event)
        elif kind == "message_stop":
            self.is_complete = True
        elif kind == "error":
            raise _stream_failure(event)
        return []

    def _merge_usage(self, data: object) -> None:
        # message_start reports the input, message_delta the cumulative output: keep the latest of each.
        reported = parse_usage(data)
        if reported is None:
            return
        previous = self._usage or Usage()
        self._usage = Usage(
            input_tokens=reported.input_tokens or previous.input_tokens,
            output_tokens=reported.output_tokens or previous.output_tokens,
        )

    def _text_event(self, text: object) -> list[StreamEvent]:
        if not isinstance(text, str) or not text:
            return []
        self._text.append(text)
        return [TextDelta(text=text)]

    def _start_block(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        block = event.get("content_block") or {}
        index = event.get("index")
        if block.get("type") == "text":
            return self._text_event(block.get("text"))
        if block.get("type") != "tool_use" or not isinstance(index, int):
            return []  # thinking and server-tool blocks are not part of our transcript
        tool = _ToolBlock(
            ordinal=len(self._tools),
            id=str(block.get("id") or new_call_id()),
            name=str(block.get("name") or UNKNOWN_TOOL),
        )
        self._tools[index] = tool
        return [ToolCallDelta(index=tool.ordinal, id=tool.id, name=tool.name)]

    def _extend_block(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            return self._text_event(delta.get("text"))
        tool = self._tools.get(event.get("index", -1))
        if delta.get("type") != "input_json_delta" or tool is None:
            return []
        part = str(delta.get("partial_json") or "")
        tool.parts.append(part)
        return [ToolCallDelta(index=tool.ordinal, arguments=part)]

    def _close_block(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        tool = self._tools.get(event.get("index", -1))
        if tool is None or tool.closed:
            return []
        tool.closed = True
        return [ToolCallDone(call=tool.build())]

    def _finish_message(self, event: Mapping[str, Any]) -> None:
        delta = event.get("delta") or {}
        if isinstance(delta.get("stop_reason"), str):
            self._stop_reason = delta["stop_reason"]
        self._merge_usage(event.get("usage"))

    def finish(self) -> list[StreamEvent]:
        """The closing events: calls never closed by the server, the usage if reported, then `ResponseDone`."""
        tools = sorted(self._tools.values(), key=lambda tool: tool.ordinal)
        events: list[StreamEvent] = [ToolCallDone(call=tool.build()) for tool in tools if not tool.closed]
        if self._usage is not None:
            events.append(UsageReport(usage=self._usage))
        response = LLMResponse(
            message=AssistantMessage(content="".join(self._text), tool_calls=tuple(tool.build() for tool in tools)),
            usage=self._usage,
            stop_reason=map_stop_reason(self._stop_reason),
            provider=self._provider,
            model=self._model,
        )
        events.append(ResponseDone(response=response))
        return events


def _stream_failure(event: Mapping[str, Any]) -> AttemptFailed:
    error = event.get("error") or {}
    kind = error.get("type")
    message = str(error.get("message") or kind or "unknown error")
    # An overload or internal error mid-stream is what a 529 or 500 would have been before the stream started.
    retryable = kind in {"overloaded_error", "api_error", "rate_limit_error"}
    return AttemptFailed(f"error in stream: {message}", retryable=retryable, provider_message=message)


class AnthropicAdapter(ClosingAdapter):
    """`LLMAdapter` for Anthropic's Messages API.

    Args:
        model: Model name, e.g. ``claude-sonnet-4-20250514``.
        base_url: API root, without ``/v1``.
        api_key: Sent as ``x-api-key``; defaults to ``$ANTHROPIC_API_KEY``.
        max_context_tokens: The model's context window.
        max_output_tokens: Output cap when a request sets none; `DEFAULT_MAX_OUTPUT_TOKENS` otherwise.
        extra_body: Merged into every request body after the standard fields.
        api_version: The ``anthropic-version`` header.
        provider: Name recorded on replies.
        timeout: Seconds, or an `httpx.Timeout`; while streaming it bounds the wait for each chunk.
        retry: Retry policy for 429, 5xx (529 "overloaded" included), timeouts and dropped connections.
        client: An `httpx.AsyncClient` to use (and not close); one is created otherwise.
        transport: A transport for the client this adapter creates (tests).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        max_context_tokens: int = 200_000,
        max_output_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        api_version: str = API_VERSION,
        provider: str = "anthropic",
        timeout: float | httpx.Timeout = 60.0,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(provider=provider, model=model, max_context_tokens=max_context_tokens)
        self._max_output_tokens = max_output_tokens
        self._extra_body = dict(extra_body or {})
        self._retry = retry or RetryPolicy()
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY", "")
        headers = {"x-api-key": key, "anthropic-version": api_version}
        self._channel = HTTPChannel(base_url, headers=headers, timeout=timeout, client=client, transport=transport)
        # A session sends its transcript again on every call: convert each message once, not once per call.
        self._wire_cache: WireCache[tuple[str, list[dict[str, Any]]]] = WireCache(message_blocks)

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._channel.aclose()

    @property
    def base_url(self) -> str:
        """The API root this adapter calls (shown by the server's capabilities and the devtools UI)."""
        return self._channel.base_url

    def build_body(self, request: LLMRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body sent for ``request`` (its content blocks are shared with later calls: do not modify them)."""
        system, messages = to_wire_messages(request.messages, self._wire_cache)
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": resolve_max_tokens(request, self._max_output_tokens),
            "messages": messages,
        }
        if system is not None:
            body["system"] = system
        if request.tools:
            body["tools"] = _tools_to_wire(request.tools)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(self._extra_body)
        body["stream"] = stream
        return body

    def _context(self) -> dict[str, str]:
        return {"provider": self._provider, "model": self._model}

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Make one non-streamed call.

        Raises:
            ProviderError: The API kept failing or refused the request.
        """
        body = dump_json(self.build_body(request, stream=False))

        async def attempt() -> LLMResponse:
            data = await self._channel.post_json("/v1/messages", body)
            return parse_message(data, provider=self._provider, model=self._model)

        return await retry_call(self._retry, attempt, context=self._context())

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Make one streamed call; the last event is a `ResponseDone`.

        Raises:
            ProviderError: The API kept failing before any output, or the stream broke after output started.
        """
        body = dump_json(self.build_body(request, stream=True))
        return retry_stream(self._retry, lambda: self._stream_once(body), context=self._context())

    async def _stream_once(self, body: bytes) -> AsyncGenerator[StreamEvent, None]:
        assembler = MessageAssembler(provider=self._provider, model=self._model)
        # aclosing: leaving at message_stop closes the channel's stream now, which reads the answer to its end and
        # returns the connection to the pool.
        async with aclosing(self._channel.stream_sse("/v1/messages", body)) as events:
            async for event in events:
                try:
                    data = json.loads(event.data)
                except ValueError as exc:
                    raise AttemptFailed(f"malformed stream event: {event.data[:200]!r}", retryable=True) from exc
                for item in assembler.feed(data if isinstance(data, dict) else {}):
                    yield item
                if assembler.is_complete:
                    break
        if not assembler.has_stop_reason:
            raise AttemptFailed("stream ended before the model finished", retryable=True)
        for item in assembler.finish():
            yield item
