"""Types of the session layer: its runtime options, results and stream events."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from stellate.llm.types import LLMAdapter, StopReason, StreamEvent, TokenCounter, Usage
from stellate.log.messages import Message, ToolCall
from stellate.store.leases import DEFAULT_LEASE_TTL, lease_owner

__all__ = [
    "CompressFn",
    "ConsolidateFn",
    "ContextFn",
    "Durability",
    "ForkContext",
    "Language",
    "SendDone",
    "SendResult",
    "SessionRuntime",
    "SessionStreamEvent",
]

CompressFn: TypeAlias = Callable[[Sequence[Message]], Awaitable[str]]
"""Summarizes history. The first message is a `SystemMessage` holding the previous summary, when there is one."""

ConsolidateFn: TypeAlias = Callable[[str | None, Sequence[Message]], Awaitable[str]]
"""Turns (current memory, history) into the new memory text."""

ContextFn: TypeAlias = Callable[[Sequence[Message]], Sequence[Message] | Awaitable[Sequence[Message]]]
"""Selects which of the source's messages a fork copies."""

ForkContext: TypeAlias = "Literal['none', 'inherit'] | ContextFn"
Language: TypeAlias = Literal["en", "zh"]
Durability: TypeAlias = Literal["step", "turn"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRuntime:
    """What a session needs at run time that cannot live in its log (live objects and functions)."""

    llm: LLMAdapter
    compress_fn: CompressFn | None = None
    """Summarizer used above the compression threshold; a default built from ``llm`` when None."""
    consolidate_fn: ConsolidateFn | None = None
    """History -> memory; a default built from ``llm`` when None."""
    token_counter: TokenCounter | None = None
    """Estimator for prompt size; provider usage is preferred when known."""
    max_output_tokens: int | None = None
    language: Language = "en"
    """Language of the built-in texts (session identity, default prompts)."""
    compress_threshold: float = 0.8
    """Fraction of the model's context window above which history is compressed."""
    compress_target: float = 0.4
    """Fraction of the window the kept history may use after compressing, so the next turns do not compress."""
    durability: Durability = "step"
    """``step``: the user message is stored before the model call (survives a crash mid-call);
    ``turn``: a turn is written in one transaction when it ends (fastest; a crash loses the turn in flight)."""
    lease_owner: str = field(default_factory=lease_owner)
    """Names this writer in the session's lease (host and process id by default); shown to a writer kept out."""
    lease_ttl: float = DEFAULT_LEASE_TTL
    """Seconds the session's lease lasts unless renewed; renewed every third of it while a turn runs. A writer
    that dies mid-turn keeps the session for at most this long before another may repair and take it."""
    busy_timeout: float = 30.0
    """Seconds a turn waits for another writer's turn on the same session to end before `SessionBusyError`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SendResult:
    """Outcome of one model call made by a session."""

    content: str
    tool_calls: tuple[ToolCall, ...] = field(default=())
    usage: Usage | None = None
    stop_reason: StopReason = "stop"
    turn: int = 0
    step: int = 0
    output: Any = None
    """The validated structured output, for a send with ``output_type`` (None otherwise)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SendDone:
    """Last event of `Session.stream`: the recorded result."""

    result: SendResult
    type: Literal["send_done"] = "send_done"


SessionStreamEvent: TypeAlias = StreamEvent | SendDone
