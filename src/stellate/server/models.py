"""The API's JSON bodies: pydantic models at the HTTP boundary (unknown fields are refused)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from stellate.agent import SessionDigest, TopologyNode
from stellate.engine import ForkOptions
from stellate.engine.events import TurnResult
from stellate.server.image_models import ImageIn

__all__ = [
    "MAX_SEQ",
    "ApprovalList",
    "DecisionBody",
    "DecisionOut",
    "PendingApprovalOut",
    "CallContext",
    "Capabilities",
    "ContentBody",
    "CreateSessionBody",
    "ErasePlanOut",
    "EventOut",
    "EventPage",
    "ForkBody",
    "Health",
    "HistoryEventOut",
    "HistoryPageOut",
    "Info",
    "LabelBody",
    "Lineage",
    "LineageEntry",
    "MemoryOut",
    "MessageOut",
    "PruneBody",
    "TombstoneOut",
    "ReflectBody",
    "ReflectionOut",
    "RunningTurns",
    "SessionDetail",
    "SessionDigest",
    "SessionPage",
    "TopologyPage",
    "TopologyNode",
    "TurnBody",
    "TurnCancelled",
    "TurnResult",
]

MAX_SEQ = 2**62
"""Largest seq the API takes: past it no log can reach, and SQLite's 64-bit integers would overflow."""

SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSessionBody(_Body):
    """A new root session."""

    label: str = Field("", max_length=500)
    system_prompt: str | None = Field(None, max_length=200_000)
    session_id: str | None = Field(None, pattern=SESSION_ID_PATTERN)
    """Id to use (default: a new one)."""
    llm: str | None = Field(None, max_length=200)
    """A named model of the server (see ``GET /v1/capabilities``); default: the server's model."""
    tools: list[str] | None = Field(None, max_length=200)
    """Names of the tools the session may call; default: all of them."""
    skills: list[str] | None = Field(None, max_length=200)
    """Skill whitelist; ``[]`` means none, default: every skill."""


class TurnBody(_Body):
    """A user message opening a turn."""

    content: str = Field(min_length=1, max_length=200_000)
    images: list[ImageIn] = Field(default_factory=list, max_length=16)
    """Images sent with the message (base64, or the hash of an upload)."""


class ContentBody(_Body):
    """A slot's new content (memory, insight)."""

    content: str = Field(max_length=200_000)


class LabelBody(_Body):
    """A session's new label."""

    label: str = Field(min_length=1, max_length=500)


class ForkBody(_Body):
    """A fork: every `ForkOptions` field a remote caller can express, and at most one fork point."""

    label: str = Field(min_length=1, max_length=500)
    context: Literal["none", "inherit", "compress"] | None = None
    """Without it: ``inherit`` when a fork point is given, else the profile's choice, else ``none``."""
    prompt: str | None = Field(None, max_length=100_000)
    system_prompt: str | None = Field(None, max_length=100_000)
    profile: str | None = None
    profile_vars: dict[str, str] | None = None
    skills: list[str] | None = None
    tools: list[str] | None = None
    llm: str | None = None
    """A named model of the server (see ``GET /v1/capabilities``)."""
    topology_parent_id: str | None = None
    session_id: str | None = Field(None, pattern=SESSION_ID_PATTERN)
    boundary: int | None = Field(None, ge=0, le=MAX_SEQ)
    """Inherit exactly events ``0..boundary`` (refused inside a turn)."""
    at_seq: int | None = Field(None, ge=0, le=MAX_SEQ)
    """Anchor: inherit up to the end of the turn holding this seq (a clicked message)."""

    @model_validator(mode="after")
    def _one_fork_point(self) -> ForkBody:
        if self.boundary is not None and self.at_seq is not None:
            raise ValueError("give either boundary or at_seq, not both")
        if (self.boundary is not None or self.at_seq is not None) and self.context not in (None, "inherit"):
            raise ValueError("a fork point (boundary or at_seq) needs context 'inherit'")
        return self

    def options(self) -> ForkOptions:
        """The `ForkOptions` this body asks for."""
        point = self.boundary is not None or self.at_seq is not None
        return ForkOptions(
            label=self.label,
            context="inherit" if point and self.context is None else self.context,
            prompt=self.prompt,
            system_prompt=self.system_prompt,
            profile=self.profile,
            profile_vars=self.profile_vars,
            skills=self.skills,
            tools=self.tools,
            llm=self.llm,
            topology_parent_id=self.topology_parent_id,
            session_id=self.session_id,
            boundary=self.boundary,
            at_seq=self.at_seq,
        )


class ReflectBody(_Body):
    """Options of a reflection."""

    synthesis_session_id: str | None = None
    """Store the synthesis as this session's memory."""


class SessionPage(BaseModel):
    """One page of session digests."""

    items: list[SessionDigest]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; None on the last page."""


class TopologyPage(BaseModel):
    """One page of the forest's nodes, in creation order, each without its children."""

    items: list[TopologyNode]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; None on the last page."""


class SessionDetail(BaseModel):
    """Everything about one session except its log."""

    id: str
    label: str
    status: str
    parent_id: str | None
    """Topology parent: where the node hangs."""
    source_id: str | None
    """Where the history came from (may differ from the topology parent)."""
    fork_seq: int | None
    inherited: int
    """Events read from the source by reference (seqs below this are inherited)."""
    created_at: int
    last_activity: int
    turn_count: int
    next_seq: int
    open_turn: bool
    """A turn is open in the log (running, or interrupted and not yet repaired)."""
    running: bool
    """This server is running a turn of the session now."""
    awaiting_approval: int = 0
    """Tool calls of the open turn waiting for approval: the turn is paused (see ``GET .../approvals``)."""
    system_prompt: str | None
    memory: str | None
    insight: str | None
    """The pending insight (consumed by the next successful model call)."""
    config: dict[str, Any]
    """The configuration as stored: prompt, skills, the names of model, tools and profile (with its vars), and
    for a fork ``sources``: the layer each setting came from (``defaults``, ``parent``, ``profile``, ``options``,
    or a combination such as ``profile+options``)."""
    inherited_turns: int = 0
    """Of ``turn_count``, the turns read from the fork source; the session's own are the rest."""


class EventOut(BaseModel):
    """One event of a session's log."""

    seq: int
    type: str
    time: int
    data: dict[str, Any]
    inherited: bool
    """Read from the fork source by reference."""


class EventPage(BaseModel):
    """A slice of a session's log."""

    events: list[EventOut]
    next_seq: int
    """The log's length when read; ask ``after=next_seq - 1`` for what comes next."""
    inherited: int


class HistoryEventOut(BaseModel):
    """One agent event of the space's event history."""

    id: int
    """Orders the space's history (1, 2, 3, ...); the SSE ``id`` of the same event on ``/v1/events``."""
    type: str
    time: int
    """Epoch milliseconds when it was kept."""
    data: dict[str, Any]
    """The event as ``/v1/events`` sends it."""


class HistoryPageOut(BaseModel):
    """Some of the space's recent agent events, oldest first."""

    events: list[HistoryEventOut]
    last_id: int
    """The newest id when read: stream ``/v1/events?after=last_id`` to go on live without a gap."""
    next_after: int | None
    """Ask ``after=next_after`` for the next page; None when this page reached ``last_id``."""


class MessageOut(BaseModel):
    """A transcript message."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: list[dict[str, str]] | None = None
    call_id: str | None = None
    name: str | None = None
    is_error: bool | None = None
    images: list[dict[str, Any]] | None = None
    """References of the message's images (``sha256``, ``media_type``, ``bytes``, ``width``, ``height``)."""


class CallContext(BaseModel):
    """The exact context of one past model call."""

    session_id: str
    step: int
    """Seq of the assistant message that call produced."""
    system_prompt: str | None
    insight: str | None
    """The insight that call consumed, if any."""
    messages: list[MessageOut]
    """Every message sent, system prompt and identity first."""
    tools: list[dict[str, Any]]
    """Tools offered (the session's tools as configured now)."""


class LineageEntry(BaseModel):
    """One session on a line of descent."""

    id: str
    label: str
    status: str
    parent_id: str | None
    source_id: str | None
    fork_seq: int | None
    """Seq of the source this session was forked at (None: it inherited no events)."""


class Lineage(BaseModel):
    """Where a session comes from and what grew out of it."""

    session: LineageEntry
    ancestors: list[LineageEntry]
    """Topology ancestors, parent first, root last."""
    descendants: TopologyNode
    """The session's subtree."""


class RunningTurns(BaseModel):
    """Sessions of the space running a turn on this server now."""

    session_ids: list[str]


class MemoryOut(BaseModel):
    """A session's memory after consolidation."""

    session_id: str
    memory: str


class TurnCancelled(BaseModel):
    """Whether a running turn was asked to stop."""

    cancelled: bool


class ReflectionOut(BaseModel):
    """What a reflection produced."""

    synthesis: str
    insights: dict[str, str]
    """Insight delivered, per session id."""
    dropped: list[str]
    """Session ids the reflector named that do not exist."""


class ReflectorOut(BaseModel):
    """The reflector of the space: its model, its prompt and its schedule."""

    provider: str
    model: str
    base_url: str | None
    """The API root of its model, when it is called over HTTP."""
    prompt: Literal["built-in", "custom"]
    every_seconds: float | None
    """Seconds between scheduled reflections; None: only on request."""


class Capabilities(BaseModel):
    """What sessions of this space may use, and the schedule of background work."""

    tools: list[dict[str, Any]]
    builtin_tools: list[str]
    skills: list[dict[str, str]]
    profiles: list[dict[str, Any]]
    models: list[dict[str, Any]]
    """Named models: name, provider, model (never a key)."""
    default_model: dict[str, Any] | None
    consolidate_every: int | None
    consolidate_on_archive: bool
    split_guard: dict[str, int] | None
    """``min_turns`` and ``cooldown_turns`` when forks are guarded."""
    reflector: bool
    max_rounds: int
    reflection: ReflectorOut | None = None
    """The reflector (None: none is configured, and ``POST /v1/reflect`` answers ``usage_error``)."""


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok"]


class Info(BaseModel):
    """About this server and the caller."""

    version: str
    api: Literal["v1"]
    space: str
    auth: Literal["keys", "none"]
    read_only: bool
    store: str


class ErasePlanOut(BaseModel):
    """What an erase took (or, as a plan, would take) and which dependents keep their own copy."""

    erased: list[str]
    """Sessions whose content is gone (a tombstone stays for each), in creation order."""
    kept: list[str]
    """Sessions forked from them that got their own copy of what they inherited."""
    scrubbed: bool
    """False when the freed bytes may still sit in the database's write-ahead log (see docs/store.md)."""


class TombstoneOut(BaseModel):
    """What remains of an erased session: lineage and who erased it when, no content."""

    id: str
    parent_id: str | None
    source_id: str | None
    fork_seq: int | None
    created_at: int
    erased_at: int
    erased_by: str
    """The API key's id (``local`` without keys), ``prune``, or what a library caller gave."""


class PruneBody(_Body):
    """Erase the space's archived sessions whose last activity is older than ``older_than`` seconds."""

    older_than: float = Field(ge=0, le=1e11, strict=True, description="seconds since the last activity")
    dry_run: StrictBool = False
    """Name what would go, erase nothing."""


class PendingApprovalOut(BaseModel):
    """A tool call of a paused turn waiting for approval."""

    session_id: str
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str
    """The arguments the model gave (JSON text)."""
    deadline: int | None
    """Epoch ms after which ``on_timeout`` decides, or null for no deadline."""
    on_timeout: Literal["approve", "deny"]


class ApprovalList(BaseModel):
    """Tool calls waiting for approval."""

    items: list[PendingApprovalOut]


class DecisionBody(_Body):
    """A decision on one waiting tool call."""

    decision: Literal["approve", "deny"]
    arguments: str | None = Field(None, max_length=200_000)
    """Edited arguments (one JSON object as text), with ``approve`` only; default: the model's."""
    reason: str | None = Field(None, max_length=10_000)
    """Why, with ``deny``: the model reads it in the call's result."""
    by: str = Field("user", min_length=1, max_length=200)
    """Who decides (recorded in the log)."""


class DecisionOut(BaseModel):
    """What a decision did: the resumed turn's result, or null while other calls of the turn still wait."""

    call_id: str
    decision: Literal["approve", "deny"]
    result: TurnResult | None


class SearchHitOut(BaseModel):
    """One message that matched a search. ``label`` and ``snippet`` are untrusted text: show them as text."""

    session_id: str
    """The session that holds the message in its own log (forks inheriting it are not listed)."""
    label: str
    archived: bool
    seq: int
    """The message's seq in that session: open the conversation there."""
    turn: int
    role: Literal["user", "assistant"]
    time: int
    """Epoch milliseconds."""
    snippet: str
    """Part of the message around the first match; whitespace collapsed, ``…`` where cut."""
    highlights: list[tuple[int, int]]
    """``[start, end)`` character offsets in ``snippet`` where the terms occur."""


class SearchPageOut(BaseModel):
    """One page of search hits, best first."""

    hits: list[SearchHitOut]
    next_offset: int | None
    """Pass as ``offset`` for the next page; None on the last page."""
