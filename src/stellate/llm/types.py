"""The LLM seam: requests, responses, stream events and the `LLMAdapter` protocol.

Everything above the ``llm`` layer talks to models only through these types, so a provider's quirks
(empty ``choices``, ``null`` chunks, Anthropic's separate ``system`` field) never leak upward.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from stellate.log.messages import AssistantMessage, Message, ToolCall

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "LLMAdapter",
    "LLMRequest",
    "LLMResponse",
    "NativeOutput",
    "OutputSchema",
    "ResponseDone",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "TokenCounter",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolSpec",
    "Usage",
    "UsageReport",
]

#: Output token cap used when neither the call nor the adapter sets one.
DEFAULT_MAX_OUTPUT_TOKENS = 4096

StopReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "error", "unknown"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSchema:
    """A JSON schema the reply must follow, for adapters with a native structured-output mode."""

    name: str
    """Name of the schema (letters, digits, ``_`` and ``-``), sent to the provider."""
    schema: dict[str, Any]
    """JSON schema of the reply; its root is an object."""
    description: str = ""
    strict: bool = False
    """Ask the provider to enforce the schema exactly (OpenAI's strict mode accepts only a subset of schemas)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage reported by the provider for one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMRequest:
    """One model call: the assembled context, the tools offered, and per-call options."""

    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    max_output_tokens: int | None = None
    """Per-call cap; wins over the adapter's option, which wins over `DEFAULT_MAX_OUTPUT_TOKENS`."""
    temperature: float | None = None
    output: OutputSchema | None = None
    """Constrain the reply to this schema; sent only to adapters that are `NativeOutput` and support it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMResponse:
    """A finished model call."""

    message: AssistantMessage
    usage: Usage | None = None
    stop_reason: StopReason = "stop"
    provider: str = ""
    model: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of assistant text."""

    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta:
    """A piece of a tool call being streamed; ``index`` groups the pieces of one call."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDone:
    """A tool call whose arguments are complete (they may still be malformed JSON)."""

    call: ToolCall
    type: Literal["tool_call_done"] = "tool_call_done"


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReport:
    """Usage reported during a stream."""

    usage: Usage
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseDone:
    """Always the last event of a successful stream: the assembled response."""

    response: LLMResponse
    type: Literal["done"] = "done"


StreamEvent: TypeAlias = TextDelta | ToolCallDelta | ToolCallDone | UsageReport | ResponseDone


@runtime_checkable
class LLMAdapter(Protocol):
    """A model behind a provider API.

    ``complete`` and ``stream`` must raise `stellate.errors.ProviderError` (after retries) or
    `stellate.errors.LLMError`, never a transport library's exception. Cancellation propagates.
    """

    @property
    def provider(self) -> str:
        """Provider name recorded on assistant messages (``openai``, ``anthropic``, ``scripted``...)."""
        ...

    @property
    def model(self) -> str:
        """Model name recorded on assistant messages."""
        ...

    @property
    def max_context_tokens(self) -> int:
        """Context window of the model, used for the compression threshold."""
        ...

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Make one call and return the whole response."""
        ...

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Make one call and yield its events; the last one is a `ResponseDone`."""
        ...


@runtime_checkable
class NativeOutput(Protocol):
    """An adapter that can constrain its reply to a JSON schema (``LLMRequest.output``).

    Adapters without it get structured output through a tool call the model is asked to make instead.
    """

    def supports_native_output(self) -> bool:
        """Whether this adapter (as configured) honours ``LLMRequest.output``."""
        ...


class TokenCounter(Protocol):
    """Estimates the prompt size of a list of messages."""

    def count(self, messages: Sequence[Message]) -> int:
        """Estimated number of tokens ``messages`` take in a prompt."""
        ...
