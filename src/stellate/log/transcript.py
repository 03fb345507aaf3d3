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
from typing import Any

from stellate.log.events import SURFACE_TYPES, Event
from stellate.log.images import images_from_json
from stellate.log.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage, message_from_json

__all__ = [
    "INTERRUPTED_REPLY_NOTE",
    "KeptRun",
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
        return [UserMessage(content=data["content"], images=images_from_json(data.get("images")))]
    if event.type == "assistant/message":
        calls = tuple(ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in data["tool_calls"])
        if not data["content"] and not calls:
            return []
        content = data["content"] + INTERRUPTED_REPLY_NOTE if data.get("interrupted") else data["content"]
        return [AssistantMessage(content=content, tool_calls=calls)]
    if event.type == "tool/result":
        return [
            ToolMessage(
                call_id=data["call_id"],
                name=data["name"],
                content=data["content"],
                is_error=data["is_error"],
                images=images_from_json(data.get("images")),
            )
        ]
    if event.type == "context/imported":
        return [message_from_json(m) for m in data["messages"]]
    return []


@dataclass(frozen=True, slots=True)
class KeptRun:
    """The first ``count`` entries of three parallel lists that are only ever appended to: a shared, immutable run.

    A fold hands its lists to a fork (or a decoded segment hands its own) without copying them: the owner may
    append after ``count``, but never changes or removes an entry before it.
    """

    seqs: list[int]
    messages: list[Message]
    weights: list[int]
    count: int

    def tail(self, start: int) -> KeptRun:
        """The part of this run whose seqs are ``>= start`` (as a new run over fresh lists)."""
        at = bisect.bisect_left(self.seqs, start, 0, self.count)
        end = self.count
        return KeptRun(self.seqs[at:end], self.messages[at:end], self.weights[at:end], end - at)

    def reweighed(self, weigh: Callable[[Message], int] | None) -> KeptRun:
        """This run over fresh lists, each message weighed by ``weigh`` (0 without one)."""
        messages = self.messages[: self.count]
        weights = [weigh(m) for m in messages] if weigh is not None else [0] * self.count
        return KeptRun(self.seqs[: self.count], messages, weights, self.count)


class TranscriptFold:
    """Incremental transcript derivation: absorb events one by one, read the transcript at any point.

    Messages of closed turns are final (the invariants guarantee their tool groups are complete), so only
    the open turn is sanitized when the transcript is read; reading costs a list copy, not a re-fold.
    Closed-turn messages live in shared immutable runs (inherited from a fork source or decoded from stored
    segments) followed by the fold's own lists, so a fork shares its source's messages instead of copying them.

    Args:
        weigh: Optional weight of a message (a token estimate); the fold keeps the sum for closed turns.
    """

    def __init__(self, weigh: Callable[[Message], int] | None = None) -> None:
        self._weigh = weigh
        self.runs: tuple[KeptRun, ...] = ()
        """Shared runs before the fold's own lists, oldest first."""
        self._seqs: list[int] = []
        self._messages: list[Message] = []
        self._weights: list[int] = []
        self.kept_weight = 0
        self.turn: list[tuple[int, Message]] | None = None
        self.turn_has_output = False
        self.summary: str | None = None
        self.summary_through_seq: int | None = None
        self.cut_through = -1
        """Highest ``through_seq`` of any compaction so far: closed-turn messages at or before it are gone."""
        self.may_hold_images = False
        """Whether a message may carry images (False: none does, so a call need not look for image bytes)."""

    @classmethod
    def from_runs(
        cls,
        runs: Iterable[KeptRun],
        *,
        weigh: Callable[[Message], int] | None,
        summary: str | None,
        summary_through_seq: int | None,
        cut_through: int,
        may_hold_images: bool = False,
    ) -> TranscriptFold:
        """A fold between turns whose closed-turn messages are ``runs``, minus those at or before ``cut_through``."""
        fold = cls(weigh)
        fold.may_hold_images = may_hold_images
        kept = [run if not run.count or run.seqs[0] > cut_through else run.tail(cut_through + 1) for run in runs]
        fold.runs = tuple(run for run in kept if run.count)
        fold.kept_weight = sum(sum(run.weights[: run.count]) for run in fold.runs)
        fold.summary, fold.summary_through_seq, fold.cut_through = summary, summary_through_seq, cut_through
        return fold

    # -- reading the closed-turn messages -------------------------------------------------------

    def _all_runs(self) -> list[KeptRun]:
        return [*self.runs, KeptRun(self._seqs, self._messages, self._weights, len(self._seqs))]

    @property
    def kept(self) -> list[Message]:
        """Closed-turn messages after the summary, in order (a new list)."""
        return self._flat(lambda run: run.messages)

    @property
    def kept_seqs(self) -> list[int]:
        """Seq of the event each of `kept` comes from."""
        return self._flat(lambda run: run.seqs)

    @property
    def kept_weights(self) -> list[int]:
        """Weight of each of `kept`."""
        return self._flat(lambda run: run.weights)

    def _flat(self, column: Callable[[KeptRun], list[Any]], out: list[Any] | None = None) -> list[Any]:
        """One column of every run, appended to ``out`` (a new list by default)."""
        out = [] if out is None else out
        for run in self._all_runs():
            values = column(run)
            out.extend(values if run.count == len(values) else values[: run.count])
        return out

    def kept_since(self, start: int) -> KeptRun:
        """The closed-turn messages whose seq is ``>= start`` (typically a short tail: scanned from the end)."""
        parts: list[KeptRun] = []
        for run in reversed(self._all_runs()):
            if not run.count:
                continue
            parts.append(run.tail(start))
            if run.seqs[0] < start:
                break
        parts.reverse()
        return KeptRun(
            [s for p in parts for s in p.seqs],
            [m for p in parts for m in p.messages],
            [w for p in parts for w in p.weights],
            sum(p.count for p in parts),
        )

    # -- folding --------------------------------------------------------------------------------

    def copy(self, weigh: Callable[[Message], int] | None = None) -> TranscriptFold:
        """An independent fold in the same state, sharing (not copying) every closed-turn message.

        O(number of runs): the own lists become one more shared run of the twin, and this fold only ever
        appends to them (a compaction replaces them instead of cutting them in place).
        """
        twin = TranscriptFold(weigh if weigh is not None else self._weigh)
        own = KeptRun(self._seqs, self._messages, self._weights, len(self._seqs))
        twin.runs = (*self.runs, own) if own.count else self.runs
        twin.kept_weight = self.kept_weight
        twin.turn = list(self.turn) if self.turn is not None else None
        twin.turn_has_output = self.turn_has_output
        twin.summary, twin.summary_through_seq = self.summary, self.summary_through_seq
        twin.cut_through = self.cut_through
        twin.may_hold_images = self.may_hold_images
        return twin

    def reweigh(self, weigh: Callable[[Message], int] | None) -> None:
        """Weigh every closed-turn message again with ``weigh`` (another token counter), and keep using it.

        O(kept messages). The weights become new lists: forks may share the old ones (see `copy`).
        """
        self._weigh = weigh
        self.runs = tuple(run.reweighed(weigh) for run in self._all_runs() if run.count)
        self._seqs, self._messages, self._weights = [], [], []
        self.kept_weight = sum(sum(run.weights) for run in self.runs)

    def add(self, event: Event) -> None:
        """Absorb the next event of the log."""
        if event.type == "turn/start":
            self.turn, self.turn_has_output = [], False
        elif event.type == "turn/end":
            self._end_turn(event.data["reason"])
        elif event.type == "compaction/summary":
            self.compact(event.data["through_seq"], event.data["summary"])
        elif event.type in SURFACE_TYPES:
            if "images" in event.data or event.type == "context/imported":
                self.may_hold_images = True
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
        self._seqs.append(seq)
        self._messages.append(message)
        self._weights.append(weight)
        self.kept_weight += weight

    def _end_turn(self, reason: str) -> None:
        if self.turn is not None and (reason == "completed" or self.turn_has_output):
            for seq, message in self.turn:
                self._keep(seq, message)
        self.turn = None

    def compact(self, through_seq: int, summary: str) -> None:
        """Replace everything at or before ``through_seq`` with ``summary``."""
        self.summary, self.summary_through_seq = summary, through_seq
        self.cut_through = max(self.cut_through, through_seq)
        seqs, messages, weights = self.kept_seqs, self.kept, self.kept_weights
        cut = bisect.bisect_right(seqs, through_seq)
        # New lists, never a cut in place: forks may share the old ones.
        self.runs, self._seqs, self._messages, self._weights = (), seqs[cut:], messages[cut:], weights[cut:]
        self.kept_weight = sum(self._weights)
        if self.turn is not None:
            self.turn = [(s, m) for s, m in self.turn if s > through_seq]

    def open_turn_messages(self) -> list[Message]:
        """Sanitized messages of the open turn (empty between turns)."""
        return sanitize_messages([m for _, m in self.turn]) if self.turn else []

    def messages(self, lead: Iterable[Message] = ()) -> list[Message]:
        """The transcript's messages after the summary, open turn included, after ``lead`` (one new list).

        Built in a single pass over the shared runs: a model call's context copies the history once, not once
        per layer that adds to it (O(messages) is inherent, since the request carries them all).
        """
        out = self._flat(lambda run: run.messages, list(lead))
        out.extend(self.open_turn_messages())
        return out

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
