"""Transcript derivation: the messages a model sees, folded from the log (DESIGN.md §2).

The result is always a valid provider transcript: no tool call without its result, no result without
its call, no empty assistant message. A turn that ended without any assistant output (failed or aborted
early) contributes nothing; its events stay in the log for audit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from stellate.log.events import Event
from stellate.log.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage, message_from_json

__all__ = ["Transcript", "derive_transcript", "event_messages", "sanitize_messages"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """History as the model should see it."""

    summary: str | None = None
    """Latest compaction summary, standing for everything at or before ``summary_through_seq``."""
    summary_through_seq: int | None = None
    messages: tuple[Message, ...] = field(default=())
    """Messages after the summary, in order."""


def event_messages(event: Event) -> list[Message]:
    """The messages a surface event contributes (empty for every other event)."""
    data = event.data
    if event.type == "user/message":
        return [UserMessage(content=data["content"])]
    if event.type == "assistant/message":
        calls = tuple(ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in data["tool_calls"])
        if not data["content"] and not calls:
            return []
        return [AssistantMessage(content=data["content"], tool_calls=calls)]
    if event.type == "tool/result":
        return [
            ToolMessage(call_id=data["call_id"], name=data["name"], content=data["content"], is_error=data["is_error"])
        ]
    if event.type == "context/imported":
        return [message_from_json(m) for m in data["messages"]]
    return []


@dataclass(slots=True)
class _Fold:
    kept: list[tuple[int, Message]] = field(default_factory=list)
    turn: list[tuple[int, Message]] | None = None
    turn_has_output: bool = False
    summary: str | None = None
    through: int | None = None

    def add(self, event: Event) -> None:
        target = self.turn if self.turn is not None else self.kept
        for message in event_messages(event):
            target.append((event.seq, message))
            self.turn_has_output = self.turn_has_output or message.role == "assistant"

    def end_turn(self, reason: str) -> None:
        if self.turn is not None and (reason == "completed" or self.turn_has_output):
            self.kept.extend(self.turn)
        self.turn = None

    def compact(self, through_seq: int, summary: str) -> None:
        self.summary, self.through = summary, through_seq
        self.kept = [(s, m) for s, m in self.kept if s > through_seq]
        if self.turn is not None:
            self.turn = [(s, m) for s, m in self.turn if s > through_seq]


def derive_transcript(events: Iterable[Event]) -> Transcript:
    """Fold a log (or a prefix of one) into the transcript a model call would use.

    Messages of a still-open turn are included, so a tool continuation sees the turn so far.
    """
    fold = _Fold()
    for event in events:
        if event.type == "turn/start":
            fold.turn, fold.turn_has_output = [], False
        elif event.type == "turn/end":
            fold.end_turn(event.data["reason"])
        elif event.type == "compaction/summary":
            fold.compact(event.data["through_seq"], event.data["summary"])
        else:
            fold.add(event)
    messages = [m for _, m in fold.kept] + [m for _, m in fold.turn or ()]
    return Transcript(
        summary=fold.summary, summary_through_seq=fold.through, messages=tuple(sanitize_messages(messages))
    )


def sanitize_messages(messages: Sequence[Message]) -> list[Message]:
    """Drop every tool-call group that is not complete, and every result that answers no call.

    A group is an assistant message with tool calls followed by its results; it stays only when every
    call is answered. Other messages are kept as they are.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if isinstance(message, ToolMessage):
            i += 1  # a result whose call is not right before it
            continue
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            out.append(message)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and isinstance(messages[j], ToolMessage):
            j += 1
        results = [m for m in messages[i + 1 : j] if isinstance(m, ToolMessage)]
        wanted = {c.id for c in message.tool_calls}
        if wanted == {r.call_id for r in results} and len(results) == len(wanted):
            out.extend(messages[i:j])
        elif message.content:
            out.append(AssistantMessage(content=message.content))
        i = j
    return out
