"""Transcript derivation: the messages a model sees, folded from the log (DESIGN.md §2).

The result is always a valid provider transcript: no tool call without its result, no result without
its call, no empty assistant message. A turn that ended without any assistant output (failed or aborted
early) contributes nothing; its events stay in the log for audit.

A reply whose stream broke (``assistant/message {interrupted: true}``) is kept, because the person saw it
and may refer to it, but it ends with `INTERRUPTED_REPLY_NOTE`: replayed bare, the model would take the
fragment for a reply it finished.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from stellate.log.events import Event
from stellate.log.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage, message_from_json

__all__ = [
    "INTERRUPTED_REPLY_NOTE",
    "Transcript",
    "TranscriptFold",
    "derive_transcript",
    "event_messages",
    "sanitize_messages",
]

#: Appended, in the model's transcript only, to a reply whose stream broke before it finished.
INTERRUPTED_REPLY_NOTE = "\n\n[This reply was cut off before it finished: it is incomplete.]"


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
        content = data["content"] + INTERRUPTED_REPLY_NOTE if data.get("interrupted") else data["content"]
        return [AssistantMessage(content=content, tool_calls=calls)]
    if event.type == "tool/result":
        return [
            ToolMessage(call_id=data["call_id"], name=data["name"], content=data["content"], is_error=data["is_error"])
        ]
    if event.type == "context/imported":
        return [message_from_json(m) for m in data["messages"]]
    return []


class TranscriptFold:
    """Incremental transcript derivation: absorb events one by one, read the transcript at any point.

    Messages of closed turns are final (the invariants guarantee their tool groups are complete), so only
    the open turn is sanitized when the transcript is read; reading costs a list copy, not a re-fold.

    Args:
        weigh: Optional weight of a message (a token estimate); the fold keeps the sum for closed turns.
    """

    def __init__(self, weigh: Callable[[Message], int] | None = None) -> None:
        self._weigh = weigh
        self.kept_seqs: list[int] = []
        self.kept: list[Message] = []
        self.kept_weights: list[int] = []
        self.kept_weight = 0
        self.turn: list[tuple[int, Message]] | None = None
        self.turn_has_output = False
        self.summary: str | None = None
        self.summary_through_seq: int | None = None

    def copy(self, weigh: Callable[[Message], int] | None = None) -> TranscriptFold:
        """An independent fold in the same state (lists copied, messages shared: they are immutable)."""
        twin = TranscriptFold(weigh if weigh is not None else self._weigh)
        twin.kept_seqs, twin.kept, twin.kept_weights = list(self.kept_seqs), list(self.kept), list(self.kept_weights)
        twin.kept_weight = self.kept_weight
        twin.turn = list(self.turn) if self.turn is not None else None
        twin.turn_has_output = self.turn_has_output
        twin.summary, twin.summary_through_seq = self.summary, self.summary_through_seq
        return twin

    def add(self, event: Event) -> None:
        """Absorb the next event of the log."""
        if event.type == "turn/start":
            self.turn, self.turn_has_output = [], False
        elif event.type == "turn/end":
            self._end_turn(event.data["reason"])
        elif event.type == "compaction/summary":
            self.compact(event.data["through_seq"], event.data["summary"])
        else:
            for message in event_messages(event):
                self._add_message(event.seq, message)

    def _add_message(self, seq: int, message: Message) -> None:
        if self.turn is not None:
            self.turn.append((seq, message))
            self.turn_has_output = self.turn_has_output or message.role == "assistant"
        else:
            self._keep(seq, message)

    def _keep(self, seq: int, message: Message) -> None:
        weight = self._weigh(message) if self._weigh else 0
        self.kept_seqs.append(seq)
        self.kept.append(message)
        self.kept_weights.append(weight)
        self.kept_weight += weight

    def _end_turn(self, reason: str) -> None:
        if self.turn is not None and (reason == "completed" or self.turn_has_output):
            for seq, message in self.turn:
                self._keep(seq, message)
        self.turn = None

    def compact(self, through_seq: int, summary: str) -> None:
        """Replace everything at or before ``through_seq`` with ``summary``."""
        self.summary, self.summary_through_seq = summary, through_seq
        cut = bisect.bisect_right(self.kept_seqs, through_seq)
        del self.kept_seqs[:cut], self.kept[:cut], self.kept_weights[:cut]
        self.kept_weight = sum(self.kept_weights)
        if self.turn is not None:
            self.turn = [(s, m) for s, m in self.turn if s > through_seq]

    def open_turn_messages(self) -> list[Message]:
        """Sanitized messages of the open turn (empty between turns)."""
        return sanitize_messages([m for _, m in self.turn]) if self.turn else []

    def messages(self) -> list[Message]:
        """The transcript's messages after the summary, open turn included."""
        return self.kept + self.open_turn_messages()

    def transcript(self) -> Transcript:
        """The transcript as it stands."""
        return Transcript(
            summary=self.summary, summary_through_seq=self.summary_through_seq, messages=tuple(self.messages())
        )


def derive_transcript(events: Iterable[Event]) -> Transcript:
    """Fold a log (or a prefix of one) into the transcript a model call would use.

    Messages of a still-open turn are included, so a tool continuation sees the turn so far.
    """
    fold = TranscriptFold()
    for event in events:
        fold.add(event)
    return fold.transcript()


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
