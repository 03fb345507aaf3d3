"""The OpenAI chat-completions wire format, shared by the HTTP adapter and the local llama.cpp adapter.

Servers that claim compatibility (vLLM, Ollama, llama.cpp, DeepSeek) differ in small ways: ``choices`` may be
empty or ``null``, a delta may be ``null``, usage arrives in a chunk of its own, tool-call chunks may lack an
index or carry arguments as an object. Everything here tolerates those shapes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from stellate.errors import ProviderError
from stellate.llm._wire import UNKNOWN_TOOL, WireCache, dump_json, new_call_id, parse_tool_arguments
from stellate.llm.images import image_data_url
from stellate.llm.types import (
    LLMResponse,
    OutputSchema,
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
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage

__all__ = [
    "ChunkAssembler",
    "EncodedMessages",
    "map_finish_reason",
    "message_to_wire",
    "parse_completion",
    "parse_usage",
    "to_response_format",
    "to_wire_messages",
    "to_wire_tools",
]

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


def to_wire_messages(
    messages: Sequence[Message], cache: WireCache[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Convert messages, merging consecutive system messages with a blank line (some servers accept only one).

    With ``cache``, a message object already converted for an earlier call is not converted again.
    """
    others = [m for m in messages if not isinstance(m, SystemMessage)]
    converted = iter(cache.convert_all(others) if cache is not None else [message_to_wire(m) for m in others])
    wire: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, SystemMessage):
            wire.append(next(converted))
        elif wire and wire[-1]["role"] == "system":
            wire[-1]["content"] += "\n\n" + message.content
        else:
            wire.append({"role": "system", "content": message.content})
    return wire


class EncodedMessages:
    """The ``messages`` array of a body as JSON bytes: `dump_json` of `to_wire_messages`, from two caches.

    Each non-system message is encoded once per message object (a `WireCache` of bytes). On top of that, the
    array of the previous call is kept up to its last non-system message: a session's next call starts with
    those same messages, so one list comparison replaces both the lookups and the joining. The kept part stops
    before trailing system messages, since a system message added next would merge into them.
    """

    def __init__(self) -> None:
        self._fragments: WireCache[bytes] = WireCache(_encode_message)
        self._prefix: list[Message] = []
        self._prefix_items: bytes = b""  # the prefix's wire messages, comma-separated, without brackets

    def encode(self, messages: Sequence[Message]) -> bytes:
        """The JSON array of ``messages`` in chat-completions form (consecutive system messages merged)."""
        start, head = self._reusable_prefix(messages)
        settled = len(messages)
        while settled > start and isinstance(messages[settled - 1], SystemMessage):
            settled -= 1
        items = self._items(messages[start:settled], keep=messages)
        settled_items = b",".join([head, *items] if head else items)
        self._prefix, self._prefix_items = list(messages[:settled]), settled_items
        trailing = self._items(messages[settled:], keep=messages)
        return b"[" + b",".join([settled_items, *trailing] if settled_items else trailing) + b"]"

    def _reusable_prefix(self, messages: Sequence[Message]) -> tuple[int, bytes]:
        prefix = self._prefix
        # List equality runs in C and takes identical objects as equal without calling __eq__: shared messages
        # cost next to nothing, and the system messages a session rebuilds for each call (prompt, identity)
        # compare by value. Equal messages have the same wire form, so their bytes can be reused.
        if prefix and len(messages) >= len(prefix) and list(islice(messages, len(prefix))) == prefix:
            return len(prefix), self._prefix_items
        return 0, b""

    def _items(self, messages: Sequence[Message], *, keep: Sequence[Message]) -> list[bytes]:
        """Encoded wire messages of ``messages``, which must not follow a system message of the same array."""
        if not messages:
            return []
        others = [m for m in messages if not isinstance(m, SystemMessage)]
        converted = iter(self._fragments.convert_all(others, keep=keep))
        items: list[bytes] = []
        system: list[str] = []
        for message in messages:
            if isinstance(message, SystemMessage):
                system.append(message.content)
                continue
            if system:
                items.append(dump_json({"role": "system", "content": "\n\n".join(system)}))
                system = []
            items.append(next(converted))
        if system:
            items.append(dump_json({"role": "system", "content": "\n\n".join(system)}))
        return items


def _encode_message(message: Message) -> bytes:
    return dump_json(message_to_wire(message))


def message_to_wire(message: Message) -> dict[str, Any]:
    """One message in chat-completions form (a system message on its own, unmerged)."""
    if isinstance(message, AssistantMessage):
        return _assistant_to_wire(message)
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content + _omitted(message)}
    if isinstance(message, UserMessage) and message.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
        parts += [{"type": "image_url", "image_url": {"url": image_data_url(i)}} for i in message.images]
        return {"role": "user", "content": parts}
    return {"role": message.role, "content": message.content}


def _omitted(message: ToolMessage) -> str:
    # Chat completions take images in user messages only: the model learns a tool's images exist but not them.
    if not message.images:
        return ""
    return f"\n\n[{len(message.images)} image(s) of this result not shown: this API takes images in user messages only]"


def _assistant_to_wire(message: AssistantMessage) -> dict[str, Any]:
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    calls = [
        {
            "id": call.id,
            "type": "function",
            # vLLM and llama.cpp templates parse the arguments; a malformed string would make them refuse the call.
            "function": {"name": call.name, "arguments": call.arguments if _is_object(call.arguments) else "{}"},
        }
        for call in message.tool_calls
    ]
    return {"role": "assistant", "content": message.content or None, "tool_calls": calls}


def _is_object(raw: str) -> bool:
    return raw.strip() != "" and parse_tool_arguments(raw) is not None


def to_wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools in the ``{"type": "function", "function": {...}}`` form."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def to_response_format(output: OutputSchema) -> dict[str, Any]:
    """A structured-output request as OpenAI's ``response_format`` (``json_schema`` type)."""
    schema: dict[str, Any] = {"name": output.name, "schema": output.schema, "strict": output.strict}
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def map_finish_reason(reason: object, *, has_tool_calls: bool) -> StopReason:
    """Map a ``finish_reason`` onto `StopReason`; an unknown or missing one is ``"unknown"``."""
    mapped = _FINISH_REASONS.get(reason, "unknown") if isinstance(reason, str) else "unknown"
    # Ollama and some llama.cpp builds answer "stop" for a reply that calls tools.
    return "tool_calls" if mapped == "stop" and has_tool_calls else mapped


def parse_usage(data: object) -> Usage | None:
    """Usage from a ``usage`` object, or ``None`` when there is none."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(data.get("prompt_tokens") or 0), output_tokens=int(data.get("completion_tokens") or 0)
    )


def _arguments_text(value: object) -> str:
    # Some servers send the arguments as a JSON object instead of a string.
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)


def parse_completion(data: Mapping[str, Any], *, provider: str, model: str) -> LLMResponse:
    """Parse a non-streamed ``chat.completion`` object.

    Raises:
        ProviderError: The answer holds no choice.
    """
    choices = data.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, Mapping):
        raise ProviderError("provider answered without any choice", provider=provider, model=model)
    message = choice.get("message") or {}
    calls = tuple(
        ToolCall(
            id=str(raw.get("id") or new_call_id()),
            name=str((raw.get("function") or {}).get("name") or UNKNOWN_TOOL),
            arguments=_arguments_text((raw.get("function") or {}).get("arguments")),
        )
        for raw in message.get("tool_calls") or ()
        if isinstance(raw, Mapping)
    )
    content = message.get("content")
    return LLMResponse(
        message=AssistantMessage(content=content if isinstance(content, str) else "", tool_calls=calls),
        usage=parse_usage(data.get("usage")),
        stop_reason=map_finish_reason(choice.get("finish_reason"), has_tool_calls=bool(calls)),
        provider=provider,
        model=model,
    )


@dataclass(slots=True)
class _PartialCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)

    def build(self) -> ToolCall:
        return ToolCall(id=self.id or new_call_id(), name=self.name or UNKNOWN_TOOL, arguments="".join(self.arguments))


class ChunkAssembler:
    """Turns ``chat.completion.chunk`` objects into stream events, then into the final response."""

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage: Usage | None = None
        self._finish_reason: str | None = None

    @property
    def has_finish_reason(self) -> bool:
        """Whether a chunk carried a ``finish_reason``: the model finished, whatever follows."""
        return self._finish_reason is not None

    def feed(self, chunk: Mapping[str, Any]) -> list[StreamEvent]:
        """Absorb one chunk and return the events it produces."""
        self._usage = parse_usage(chunk.get("usage")) or self._usage
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping):
                continue
            events.extend(self._feed_delta(choice.get("delta") or {}))
            if isinstance(choice.get("finish_reason"), str):
                self._finish_reason = choice["finish_reason"]
        return events

    def _feed_delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._text.append(text)
            events.append(TextDelta(text=text))
        for raw in delta.get("tool_calls") or ():
            if isinstance(raw, Mapping):
                events.append(self._feed_call(raw))
        return events

    def _call_index(self, raw: Mapping[str, Any]) -> int:
        index = raw.get("index")
        if isinstance(index, int):
            return index
        # Without an index, a new id starts a new call and anything else continues the last one.
        last = max(self._calls, default=-1)
        if last < 0 or (raw.get("id") and raw.get("id") != self._calls[last].id):
            return last + 1
        return last

    def _feed_call(self, raw: Mapping[str, Any]) -> ToolCallDelta:
        index = self._call_index(raw)
        call = self._calls.setdefault(index, _PartialCall())
        function = raw.get("function") or {}
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        name = function.get("name") if isinstance(function.get("name"), str) else None
        arguments = _arguments_text(function.get("arguments"))
        call.id = call.id or call_id
        call.name = call.name or name
        call.arguments.append(arguments)
        return ToolCallDelta(index=index, id=call_id, name=name, arguments=arguments)

    def finish(self) -> list[StreamEvent]:
        """The closing events: one `ToolCallDone` per call, the usage if reported, then `ResponseDone`."""
        calls = tuple(self._calls[index].build() for index in sorted(self._calls))
        events: list[StreamEvent] = [ToolCallDone(call=call) for call in calls]
        if self._usage is not None:
            events.append(UsageReport(usage=self._usage))
        response = LLMResponse(
            message=AssistantMessage(content="".join(self._text), tool_calls=calls),
            usage=self._usage,
            stop_reason=map_finish_reason(self._finish_reason, has_tool_calls=bool(calls)),
            provider=self._provider,
            model=self._model,
        )
        events.append(ResponseDone(response=response))
        return events
