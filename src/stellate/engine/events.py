"""Typed events: what a turn streams and what the agent publishes to hooks and subscribers.

One stream feeds everything (DESIGN.md §5): hooks, `Agent.subscribe`, the CLI, and later SSE and the UI.
Every event is a frozen dataclass with a literal ``type`` and the ``session_id`` it concerns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from stellate.llm.types import Usage
from stellate.log.events import TurnEndReason
from stellate.log.messages import ToolCall

__all__ = [
    "AgentEvent",
    "ApprovalDecided",
    "ApprovalRequested",
    "AssistantReply",
    "ConsolidationDone",
    "ErrorRaised",
    "InsightUpdated",
    "MemoryUpdated",
    "MessageReceived",
    "OutputReady",
    "RoundEnd",
    "RoundStart",
    "SessionArchived",
    "SessionCreated",
    "SessionForked",
    "TextChunk",
    "ToolCallStarted",
    "ToolCallFinished",
    "TurnEvent",
    "TurnFinished",
    "TurnOutcome",
    "TurnResult",
    "TurnWaiting",
    "SessionErased",
]


TurnOutcome: TypeAlias = TurnEndReason | Literal["awaiting_approval"]
"""How a turn stopped: a `TurnEndReason`, or ``awaiting_approval`` when it paused for a person's approval."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """What a whole turn produced."""

    session_id: str
    turn: int
    content: str
    """The final assistant text (the last round's)."""
    reason: TurnOutcome
    rounds: int
    """Model calls made."""
    tool_calls: int
    """Tool calls executed (failed ones included)."""
    usage: Usage = field(default_factory=Usage)
    """Usage summed over the turn's model calls."""
    output: Any = None
    """The validated structured output, for a turn run with ``output_type`` (None otherwise)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageReceived:
    """A user message opened a turn."""

    session_id: str
    content: str
    type: Literal["message_received"] = "message_received"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnWaiting:
    """The turn waits for another writer's turn on the session to end (sent once, before it starts)."""

    session_id: str
    holder: str | None
    """Who holds the session (``host:pid:name``), when known."""
    held_since: int | None
    """When the holder took the session (epoch ms), when known."""
    wait_seconds: float
    """The longest this turn waits before it gives up with ``session_busy``."""
    type: Literal["turn_waiting"] = "turn_waiting"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundStart:
    """A model call is about to be made."""

    session_id: str
    round: int
    type: Literal["round_start"] = "round_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk:
    """A piece of assistant text as the model streams it."""

    session_id: str
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantReply:
    """A model call finished: its text and the tools it asked for."""

    session_id: str
    round: int
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    type: Literal["assistant_reply"] = "assistant_reply"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call is about to run."""

    session_id: str
    call: ToolCall
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished:
    """A tool call finished (an error result is still a result)."""

    session_id: str
    call: ToolCall
    content: str
    is_error: bool
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundEnd:
    """A round (model call plus its tools) finished."""

    session_id: str
    round: int
    type: Literal["round_end"] = "round_end"


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputReady:
    """A turn run with ``output_type`` got its valid answer (just before `TurnFinished`)."""

    session_id: str
    output: Any
    """The validated object (an instance of the output type)."""
    type: Literal["output"] = "output"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished:
    """Last event of a turn."""

    session_id: str
    result: TurnResult
    type: Literal["turn_finished"] = "turn_finished"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCreated:
    """A root session was created."""

    session_id: str
    label: str
    type: Literal["session_created"] = "session_created"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionForked:
    """A child session was forked."""

    session_id: str
    """The child."""
    source_id: str
    parent_id: str
    label: str
    profile: str | None = None
    type: Literal["session_forked"] = "session_forked"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionArchived:
    """A session became read-only."""

    session_id: str
    type: Literal["session_archived"] = "session_archived"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryUpdated:
    """A session's memory was replaced."""

    session_id: str
    memory: str
    type: Literal["memory_updated"] = "memory_updated"


@dataclass(frozen=True, slots=True, kw_only=True)
class InsightUpdated:
    """A session's insight was put (``insight`` set) or cleared (``None``)."""

    session_id: str
    insight: str | None
    type: Literal["insight_updated"] = "insight_updated"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsolidationDone:
    """Scheduled consolidation finished."""

    session_id: str
    memory: str
    type: Literal["consolidation_done"] = "consolidation_done"


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorRaised:
    """Something failed outside the caller's reach (a scheduled consolidation, a hook, the reflector)."""

    session_id: str | None
    source: str
    """Where: ``consolidation``, ``hook``, ``reflector``, ``turn``..."""
    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionErased:
    """A session was erased: its content is gone, a tombstone remains (the star map drops its node)."""

    session_id: str
    erased_by: str = ""
    """Who erased it, as the caller said (an API key's id, ``prune``...)."""
    type: Literal["session_erased"] = "session_erased"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested:
    """A tool call waits for a person's approval; the turn pauses (it resumes once every such call is decided)."""

    session_id: str
    turn: int
    call: ToolCall
    deadline: int | None = None
    """Epoch ms after which ``on_timeout`` decides, or None for no deadline."""
    on_timeout: Literal["approve", "deny"] = "deny"
    type: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecided:
    """A waiting tool call was approved (its arguments as given, or edited) or denied."""

    session_id: str
    call_id: str
    name: str
    decision: Literal["approved", "denied"]
    by: str
    """Who decided (the approver's name, or ``deadline`` when the deadline passed)."""
    arguments: str | None = None
    """The edited arguments (JSON text), when the approver changed them."""
    reason: str | None = None
    """Why it was denied, as the model reads it."""
    type: Literal["approval_decided"] = "approval_decided"


TurnEvent: TypeAlias = (
    TurnWaiting
    | MessageReceived
    | RoundStart
    | TextChunk
    | AssistantReply
    | ToolCallStarted
    | ToolCallFinished
    | RoundEnd
    | OutputReady
    | TurnFinished
    | ApprovalRequested
    | ApprovalDecided
)
AgentEvent: TypeAlias = (
    TurnEvent
    | SessionCreated
    | SessionForked
    | SessionArchived
    | MemoryUpdated
    | InsightUpdated
    | ConsolidationDone
    | ErrorRaised
    | SessionErased
)
