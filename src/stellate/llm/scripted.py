"""Deterministic models for tests and demos: `ScriptedLLM` replays a script, `FunctionLLM` calls your function.

Both record every `LLMRequest` they receive in ``.requests``, so a test can check exactly what context a session
assembled, and both stream their replies the way a real provider does: text in several deltas, then tool-call
deltas and completions, usage, and a closing `ResponseDone`.
"""

from __future__ import annotations

import abc
import asyncio
import collections
import inspect
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from stellate.errors import UsageError
from stellate.llm._identity import AdapterIdentity
from stellate.llm.tokens import HeuristicTokenCounter, estimate_text_tokens
from stellate.llm.types import (
    LLMRequest,
    LLMResponse,
    ResponseDone,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    Usage,
    UsageReport,
)
from stellate.log.messages import AssistantMessage, ToolCall

__all__ = ["Delay", "FunctionLLM", "Reply", "ScriptStep", "ScriptedLLM", "response_events", "tool_call"]

_WORDS = re.compile(r"^\s+|\S+\s*")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A scripted answer: text, tool calls, or both."""

    text: str = ""
    """Assistant text."""
    tool_calls: Sequence[ToolCall] = ()
    """Tool calls, in order; their ``arguments`` may be deliberately malformed JSON."""
    stop_reason: StopReason | None = None
    """Reported stop reason; ``tool_calls`` when there are calls, else ``stop``."""
    usage: Usage | None = None
    """Reported usage; when omitted, a ``chars / 4`` estimate of the request and the reply, or none at all (unknown,
    as from a provider that sends no usage) for a model made with ``estimate_usage=False``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Delay:
    """Sleep before answering with ``then``; cancelling the call during the sleep cancels it."""

    seconds: float
    """How long to sleep."""
    then: ScriptStep
    """The step answered after the sleep."""


ScriptStep: TypeAlias = (
    "str | Reply | LLMResponse | Exception | Delay | Callable[[LLMRequest], ScriptStep | Awaitable[ScriptStep]]"
)
"""One scripted call: reply text, a `Reply`, a whole `LLMResponse`, an exception to raise (e.g. `ProviderError`),
a `Delay`, or a callable that receives the request and returns (or awaits to) another step."""


def tool_call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None) -> ToolCall:
    """Build a `ToolCall` for a script; a mapping is JSON-encoded, a string is kept raw (it may be malformed)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return ToolCall(id=id or f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=raw)


def _split_text(text: str) -> list[str]:
    return _WORDS.findall(text)


def response_events(response: LLMResponse) -> list[StreamEvent]:
    """The events a provider would stream for ``response``: text by words, each call in pieces, usage, done."""
    events: list[StreamEvent] = [TextDelta(text=piece) for piece in _split_text(response.message.content)]
    for index, call in enumerate(response.message.tool_calls):
        events.append(ToolCallDelta(index=index, id=call.id, name=call.name))
        half = len(call.arguments) // 2
        events.extend(
            ToolCallDelta(index=index, arguments=piece)
            for piece in (call.arguments[:half], call.arguments[half:])
            if piece
        )
        events.append(ToolCallDone(call=call))
    if response.usage is not None:
        events.append(UsageReport(usage=response.usage))
    events.append(ResponseDone(response=response))
    return events


class _RecordingLLM(AdapterIdentity, abc.ABC):
    """What both deterministic models share: identity, request recording, usage estimates and streaming."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        max_context_tokens: int,
        native_output: bool = False,
        estimate_usage: bool = True,
    ) -> None:
        super().__init__(provider=provider, model=model, max_context_tokens=max_context_tokens)
        self.requests: list[LLMRequest] = []
        """Every request received, in order (streamed ones included)."""
        self._native_output = native_output
        self._estimate = estimate_usage

    def supports_native_output(self) -> bool:
        """Whether this fake claims a native JSON-schema mode (``native_output=True``); it never enforces it."""
        return self._native_output

    @abc.abstractmethod
    async def _answer(self, request: LLMRequest) -> LLMResponse: ...

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Record ``request`` and answer it."""
        self.requests.append(request)
        return await self._answer(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Record ``request`` and stream the answer; a scripted failure is raised before the first event."""
        response = await self.complete(request)
        for event in response_events(response):
            yield event

    async def _resolve(self, step: ScriptStep, request: LLMRequest) -> LLMResponse:
        while True:
            if isinstance(step, Delay):
                await asyncio.sleep(step.seconds)
                step = step.then
            elif isinstance(step, Exception):
                raise step
            elif isinstance(step, str | Reply | LLMResponse):
                return self._to_response(step, request)
            else:
                result = step(request)
                step = await result if inspect.isawaitable(result) else result

    def _to_response(self, step: str | Reply | LLMResponse, request: LLMRequest) -> LLMResponse:
        if isinstance(step, LLMResponse):
            return step
        reply = Reply(text=step) if isinstance(step, str) else step
        calls = tuple(reply.tool_calls)
        return LLMResponse(
            message=AssistantMessage(content=reply.text, tool_calls=calls),
            usage=reply.usage or (self._estimate_usage(request, reply) if self._estimate else None),
            stop_reason=reply.stop_reason or ("tool_calls" if calls else "stop"),
            provider=self._provider,
            model=self._model,
        )

    @staticmethod
    def _estimate_usage(request: LLMRequest, reply: Reply) -> Usage:
        tools = json.dumps([[t.name, t.description, t.parameters] for t in request.tools]) if request.tools else ""
        output = reply.text + "".join(call.name + call.arguments for call in reply.tool_calls)
        return Usage(
            input_tokens=HeuristicTokenCounter().count(request.messages) + estimate_text_tokens(tools),
            output_tokens=estimate_text_tokens(output),
        )


class ScriptedLLM(_RecordingLLM):
    """An `LLMAdapter` that answers each call with the next step of a script.

    Example:
        ``llm = ScriptedLLM(["Hello!", Reply(tool_calls=[tool_call("search", {"q": "x"})]), ProviderError("down")])``

    Args:
        script: Steps consumed one per call (see `ScriptStep`).
        default: Answered once the script is used up; without it, a call past the end raises `UsageError`.
        model: Model name recorded on replies.
        max_context_tokens: Context window this fake model claims (small by default, so that tests reach the
            compression threshold quickly).
        provider: Provider name recorded on replies.
        native_output: Claim a native structured-output mode: structured turns then expect JSON text replies
            instead of a ``final_result`` tool call.
        estimate_usage: Report a ``chars / 4`` estimate for a reply scripted without usage; with False such a reply
            reports no usage, as a provider that sends none (its tokens are then recorded as unknown).
    """

    def __init__(
        self,
        script: Iterable[ScriptStep] = (),
        *,
        default: ScriptStep | None = None,
        model: str = "scripted-model",
        max_context_tokens: int = 8192,
        provider: str = "scripted",
        native_output: bool = False,
        estimate_usage: bool = True,
    ) -> None:
        super().__init__(
            provider=provider,
            model=model,
            max_context_tokens=max_context_tokens,
            native_output=native_output,
            estimate_usage=estimate_usage,
        )
        self._script: collections.deque[ScriptStep] = collections.deque(script)
        self._default = default

    @property
    def remaining(self) -> int:
        """Steps not consumed yet."""
        return len(self._script)

    def push(self, *steps: ScriptStep) -> None:
        """Append steps to the script."""
        self._script.extend(steps)

    async def _answer(self, request: LLMRequest) -> LLMResponse:
        if self._script:
            step = self._script.popleft()
        elif self._default is not None:
            step = self._default
        else:
            raise UsageError(
                f"ScriptedLLM script is used up: call {len(self.requests)} has no step; "
                "add steps with push() or pass default=...",
                calls=len(self.requests),
            )
        return await self._resolve(step, request)


class FunctionLLM(_RecordingLLM):
    """An `LLMAdapter` that answers by calling ``function(request)``.

    The function may be sync or async and returns a reply text, a `Reply` or an `LLMResponse`; anything it raises
    propagates to the caller.

    Args:
        function: Computes the answer to each request.
        model: Model name recorded on replies.
        max_context_tokens: Context window this fake model claims.
        provider: Provider name recorded on replies.
        estimate_usage: As for `ScriptedLLM`: False makes a reply without usage report none.
    """

    def __init__(
        self,
        function: Callable[[LLMRequest], str | Reply | LLMResponse | Awaitable[str | Reply | LLMResponse]],
        *,
        model: str = "function-model",
        max_context_tokens: int = 8192,
        provider: str = "function",
        estimate_usage: bool = True,
    ) -> None:
        super().__init__(
            provider=provider, model=model, max_context_tokens=max_context_tokens, estimate_usage=estimate_usage
        )
        self._function = function

    async def _answer(self, request: LLMRequest) -> LLMResponse:
        result = self._function(request)
        answer = await result if inspect.isawaitable(result) else result
        return self._to_response(answer, request)
