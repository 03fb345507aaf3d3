"""Observability: OpenTelemetry spans and metrics after the GenAI semantic conventions, and session-aware logging.

Off until `instrument` is called, and then almost free: each hook returns a small object that only remembers
which session the code works for (so every log record can name it). `instrument` (extra ``otel``, which needs
only ``opentelemetry-api``) turns on a span per turn, model call, tool call, fork and consolidation, and four
metrics; the application configures the SDK and its exporters as it likes. Message content stays out of
spans unless ``include_content=True``.

This module sits beside ``errors``: every layer may use it, and it imports none of them.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = [
    "Scope",
    "consolidation_span",
    "current_session_id",
    "fork_span",
    "get_logger",
    "instrument",
    "is_instrumented",
    "model_span",
    "tool_span",
    "turn_span",
    "uninstrument",
]

_INSTRUMENTATION = "stellate"
_session_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("stellate_session_id", default=None)

AttributeValue = str | bool | int | float | Sequence[str]


def current_session_id() -> str | None:
    """The session the running code works for (inside a turn, tool call, fork or consolidation), or None."""
    return _session_id.get()


# -- logging ---------------------------------------------------------------------------------------


class SessionLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger whose records carry ``session_id`` (use ``%(session_id)s`` in a format).

    The id is the one passed as ``extra={"session_id": ...}``, else the session the running code works for,
    else ``"-"``.
    """

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        """Add ``session_id`` to the record's extra fields."""
        extra = dict(kwargs.get("extra") or {})
        extra.setdefault("session_id", _session_id.get() or "-")
        kwargs["extra"] = extra
        return msg, kwargs


def get_logger(name: str) -> SessionLogger:
    """The `SessionLogger` for module ``name`` (stellate's modules log through these)."""
    return SessionLogger(logging.getLogger(name))


# -- instrumentation state -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Instruments:
    tracer: Tracer
    include_content: bool
    turn_duration: Histogram
    call_duration: Histogram
    token_usage: Histogram
    tool_errors: Counter


_live: _Instruments | None = None


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    include_content: bool = False,
) -> None:
    """Turn on spans and metrics for everything stellate does in this process.

    Args:
        tracer_provider: Where spans go; OpenTelemetry's global provider when None.
        meter_provider: Where metrics go; OpenTelemetry's global provider when None.
        include_content: Also record message texts, tool arguments and results (off: only sizes, names, ids).

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (``pip install "stellate[otel]"``).
    """
    try:
        from opentelemetry import metrics, trace
    except ImportError as exc:
        raise ImportError('tracing needs OpenTelemetry: pip install "stellate[otel]"') from exc
    from stellate._version import __version__

    global _live
    tracer = trace.get_tracer(_INSTRUMENTATION, __version__, tracer_provider=tracer_provider)
    meter = metrics.get_meter(_INSTRUMENTATION, __version__, meter_provider=meter_provider)
    _live = _Instruments(
        tracer=tracer,
        include_content=include_content,
        turn_duration=meter.create_histogram("stellate.turn.duration", unit="s", description="Duration of turns"),
        call_duration=meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Duration of model calls"
        ),
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used by model calls"
        ),
        tool_errors=meter.create_counter("stellate.tool.errors", unit="{call}", description="Tool calls that failed"),
    )


def uninstrument() -> None:
    """Turn spans and metrics off again."""
    global _live
    _live = None


def is_instrumented() -> bool:
    """Whether `instrument` is in effect."""
    return _live is not None


# -- scopes ----------------------------------------------------------------------------------------


class Scope:
    """One traced operation; the quiet base only sets the current session id for log records.

    Use as a context manager. The ``record_*`` methods cost nothing when tracing is off.
    """

    __slots__ = ("_session", "_token")

    def __init__(self, session_id: str | None) -> None:
        self._session = session_id
        self._token: contextvars.Token[str | None] | None = None

    def __enter__(self) -> Scope:
        self._token = _session_id.set(self._session)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            try:
                _session_id.reset(self._token)
            except ValueError:  # exited in another context (a generator closed elsewhere): nothing to restore
                pass

    def record(self, attributes: Mapping[str, AttributeValue]) -> None:
        """Set span attributes (when traced)."""

    def record_content(self, key: str, value: Callable[[], Any]) -> None:
        """Set a content attribute from ``value()`` as JSON, only when traced with ``include_content``."""

    def record_usage(self, model: str, input_tokens: int | None, output_tokens: int | None, finish_reason: str) -> None:
        """A model call's response: model, token usage (also as metrics; None: not reported) and finish reason."""

    def record_tool_result(self, is_error: bool, content: Callable[[], str]) -> None:
        """A tool call's outcome (an error result sets the span's status and counts as a tool error)."""

    def record_turn(self, reason: str, rounds: int, input_tokens: int, output_tokens: int) -> None:
        """A turn's outcome, and its duration as a metric."""


class _TracedScope(Scope):
    __slots__ = ("_attributes", "_cm", "_instruments", "_kind", "_metric", "_name", "_span", "_started")

    def __init__(
        self, instruments: _Instruments, session_id: str | None, name: str, kind: str, attributes: dict[str, Any]
    ) -> None:
        super().__init__(session_id)
        self._instruments = instruments
        self._name, self._kind, self._attributes = name, kind, attributes
        self._metric: dict[str, AttributeValue] = {}
        self._span: Span | None = None
        self._cm: Any = None
        self._started = 0.0

    def __enter__(self) -> Scope:
        from opentelemetry.trace import SpanKind

        super().__enter__()
        kind = SpanKind.CLIENT if self._kind == "client" else SpanKind.INTERNAL
        self._cm = self._instruments.tracer.start_as_current_span(self._name, kind=kind, attributes=self._attributes)
        self._span = self._cm.__enter__()
        self._started = time.perf_counter()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        elapsed = time.perf_counter() - self._started
        try:
            if self._kind == "client":
                metric = {**self._metric, **({"error.type": exc_type.__name__} if exc_type else {})}
                self._instruments.call_duration.record(elapsed, _call_metric_attributes(self._attributes, metric))
            elif self._kind == "turn":
                self._instruments.turn_duration.record(elapsed, self._metric)
            self._cm.__exit__(exc_type, exc, tb)
        finally:
            super().__exit__(exc_type, exc, tb)

    def record(self, attributes: Mapping[str, AttributeValue]) -> None:
        """Set span attributes."""
        if self._span is not None:
            self._span.set_attributes(attributes)

    def record_content(self, key: str, value: Callable[[], Any]) -> None:
        """Set a content attribute when content recording is on."""
        if self._span is not None and self._instruments.include_content:
            produced = value()
            self._span.set_attribute(key, produced if isinstance(produced, str) else json.dumps(produced))

    def record_usage(self, model: str, input_tokens: int | None, output_tokens: int | None, finish_reason: str) -> None:
        """Record the response attributes and the token-usage metric; a count not reported is left out, not 0."""
        counts = {"input": input_tokens, "output": output_tokens}
        attributes: dict[str, AttributeValue] = {
            "gen_ai.response.model": model,
            "gen_ai.response.finish_reasons": [finish_reason],
        }
        attributes.update({f"gen_ai.usage.{kind}_tokens": n for kind, n in counts.items() if n is not None})
        self.record(attributes)
        self._metric["gen_ai.response.model"] = model
        base = _call_metric_attributes(self._attributes, self._metric)
        usage = self._instruments.token_usage
        for kind, n in counts.items():
            if n is not None:
                usage.record(n, {**base, "gen_ai.token.type": kind})

    def record_tool_result(self, is_error: bool, content: Callable[[], str]) -> None:
        """Mark a failed tool call and count it."""
        from opentelemetry.trace import Status, StatusCode

        self.record_content("gen_ai.tool.call.result", content)
        if is_error and self._span is not None:
            self._span.set_attribute("error.type", "tool_error")
            self._span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
            self._instruments.tool_errors.add(1, {"gen_ai.tool.name": str(self._attributes["gen_ai.tool.name"])})

    def record_turn(self, reason: str, rounds: int, input_tokens: int, output_tokens: int) -> None:
        """Record the turn's outcome; its duration is recorded on exit."""
        self.record(
            {
                "stellate.turn.reason": reason,
                "stellate.turn.rounds": rounds,
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
            }
        )
        self._metric["stellate.turn.reason"] = reason


def _call_metric_attributes(span: Mapping[str, Any], extra: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    keys = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model")
    return {**{key: span[key] for key in keys}, **extra}


# -- the hooks: each returns a quiet `Scope` at once when tracing is off, before building anything --------------


def turn_span(session_id: str, content: str) -> Scope:
    """A turn of ``session_id`` (GenAI ``invoke_agent``); ``content`` is recorded only with content on."""
    live = _live
    if live is None:
        return Scope(session_id)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "stellate",
        "gen_ai.conversation.id": session_id,
        "stellate.session.id": session_id,
    }
    if live.include_content:
        attributes["gen_ai.input.messages"] = json.dumps([_text_message("user", content)])
    return _TracedScope(live, session_id, "invoke_agent stellate", "turn", attributes)


def model_span(session_id: str, provider: str, model: str, *, turn: int, step: int) -> Scope:
    """One model call (GenAI ``chat``)."""
    live = _live
    if live is None:
        return Scope(session_id)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": session_id,
        "stellate.session.id": session_id,
        "stellate.turn": turn,
        "stellate.step": step,
    }
    return _TracedScope(live, session_id, f"chat {model}", "client", attributes)


def tool_span(session_id: str, name: str, call_id: str, arguments: str) -> Scope:
    """One tool call (GenAI ``execute_tool``); ``arguments`` are recorded only with content on."""
    live = _live
    if live is None:
        return Scope(session_id)
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
        "stellate.session.id": session_id,
    }
    if live.include_content:
        attributes["gen_ai.tool.call.arguments"] = arguments
    return _TracedScope(live, session_id, f"execute_tool {name}", "internal", attributes)


def fork_span(source_id: str, *, context: str, profile: str | None) -> Scope:
    """A fork of ``source_id``; the child's id is recorded once known."""
    live = _live
    if live is None:
        return Scope(source_id)
    attributes: dict[str, Any] = {
        "stellate.operation": "fork",
        "stellate.session.id": source_id,
        "stellate.fork.context": context,
    }
    if profile is not None:
        attributes["stellate.fork.profile"] = profile
    return _TracedScope(live, source_id, "fork_session", "internal", attributes)


def consolidation_span(session_id: str) -> Scope:
    """A consolidation of ``session_id``'s history into its memory."""
    live = _live
    if live is None:
        return Scope(session_id)
    attributes: dict[str, Any] = {"stellate.operation": "consolidate", "stellate.session.id": session_id}
    return _TracedScope(live, session_id, "consolidate_session", "internal", attributes)


def _text_message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def output_messages(text: str, calls: Sequence[tuple[str, str, str]], finish_reason: str) -> list[dict[str, Any]]:
    """A model reply in the GenAI ``gen_ai.output.messages`` shape."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return [{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]


def input_messages(messages: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """(role, text) pairs in the GenAI ``gen_ai.input.messages`` shape."""
    return [_text_message(role, text) for role, text in messages]
