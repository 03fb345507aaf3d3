"""Fold segments: immutable, pre-folded stretches of a log, so a cold open need not re-fold the whole log.

A segment covers the events ``[start, end)`` of one session's (logical) log, both ends between turns. It holds
what the transcript fold kept from those events (closed-turn messages with their seqs and token weights), and
the fold's small state at ``end``: summary, cursor, the writer's own slots. Chained from seq 0, segments
rebuild the fold at the last one's ``end``; the events after it are folded as usual.

Segments are derived data. The log alone stays the truth: a segment that is missing, cut short or damaged
(its checksum or shape is wrong) is simply not used, and the events it stood for are folded instead. Being
immutable, a source's segments are shared by every fork that inherits past their ``end``.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from stellate.log.events import JsonObject
from stellate.log.images import images_from_json, images_to_json
from stellate.log.invariants import Cursor
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from stellate.log.state import Slots
from stellate.log.transcript import KeptRun

__all__ = ["SEGMENT_EVENTS", "FoldSegment", "decode_segment", "encode_segment"]

#: Events a segment spans at least (it ends at the first point between turns after that many).
SEGMENT_EVENTS = 480

_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldSegment:
    """The fold's work over the events ``[start, end)`` of a log, and its state at ``end``."""

    start: int
    end: int
    kept: KeptRun
    """Closed-turn messages from events of ``[start, end)`` still kept at ``end``."""
    weigh_key: str
    """Which token counter weighed the messages; another counter re-weighs them."""
    summary: str | None
    summary_through_seq: int | None
    cut_through: int
    """Messages at or before this seq were compacted away (anywhere in the log, earlier segments too)."""
    cursor: Cursor
    slots: Slots
    """Own slots of the session that wrote the segment, at ``end``."""
    last_fork_turn: int | None
    consolidated_turn: int
    bounded_through: int | None
    has_images: bool = False
    """Whether a kept message may carry images (set when decoding; True may be a false alarm, False never lies)."""


def encode_segment(segment: FoldSegment) -> str:
    """The stored text of ``segment``: a CRC-32 of the JSON, then the JSON."""
    kept = segment.kept
    body = {
        "v": _VERSION,
        "start": segment.start,
        "end": segment.end,
        "weigh": segment.weigh_key,
        "seqs": kept.seqs[: kept.count],
        "weights": kept.weights[: kept.count],
        "messages": [_message_row(m) for m in kept.messages[: kept.count]],
        "summary": segment.summary,
        "summary_through": segment.summary_through_seq,
        "cut": segment.cut_through,
        "cursor": segment.cursor.to_json(),
        "slots": _slots_json(segment.slots),
        "fork_turn": segment.last_fork_turn,
        "consolidated": segment.consolidated_turn,
        "bounded": segment.bounded_through,
    }
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return f"{zlib.crc32(text.encode()):08x}{text}"


def decode_segment(stored: str) -> FoldSegment | None:
    """The segment in ``stored``, or None when it is damaged or of an unknown version."""
    try:
        text = stored[8:]
        if int(stored[:8], 16) != zlib.crc32(text.encode()):
            return None
        # Image references are the only "sha256" keys in a segment (a quote inside a message is escaped).
        segment = _from_json(json.loads(text), has_images='"sha256"' in text)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None
    return segment if _is_consistent(segment) else None


def _from_json(body: JsonObject, *, has_images: bool) -> FoldSegment | None:
    if body.get("v") != _VERSION:
        return None
    seqs, weights = body["seqs"], body["weights"]
    messages = [_message_from_row(row) for row in body["messages"]]
    return FoldSegment(
        start=body["start"],
        end=body["end"],
        kept=KeptRun(seqs, messages, weights, len(seqs)),
        weigh_key=body["weigh"],
        summary=body["summary"],
        summary_through_seq=body["summary_through"],
        cut_through=body["cut"],
        cursor=Cursor.from_json(body["cursor"]),
        slots=Slots(**body["slots"]),
        last_fork_turn=body["fork_turn"],
        consolidated_turn=body["consolidated"],
        bounded_through=body["bounded"],
        has_images=has_images,
    )


def _is_consistent(segment: FoldSegment | None) -> bool:
    if segment is None:
        return False
    kept, cursor = segment.kept, segment.cursor
    in_range = all(segment.start <= s < segment.end for s in kept.seqs[:1] + kept.seqs[-1:])
    return (
        0 <= segment.start < segment.end == cursor.next_seq
        and not cursor.turn_open
        and len(kept.seqs) == len(kept.weights) == len(kept.messages)
        and in_range
    )


def _slots_json(slots: Slots) -> JsonObject:
    return {
        "label": slots.label,
        "status": slots.status,
        "system_prompt": slots.system_prompt,
        "memory": slots.memory,
        "insight": slots.insight,
        "config": slots.config,
        "last_activity": slots.last_activity,
    }


# Compact rows instead of message_to_json's dicts: a cold open decodes every one of them.
def _message_row(message: Message) -> list[Any]:
    if isinstance(message, AssistantMessage):
        return ["a", message.content, [[c.id, c.name, c.arguments] for c in message.tool_calls]]
    if isinstance(message, ToolMessage):
        row = ["t", message.content, message.call_id, message.name, message.is_error]
        return [*row, images_to_json(message.images)] if message.images else row
    if isinstance(message, UserMessage):
        return ["u", message.content, images_to_json(message.images)] if message.images else ["u", message.content]
    return ["s", message.content]


def _message_from_row(row: list[Any]) -> Message:
    kind = row[0]
    if kind == "u":
        return UserMessage(content=row[1], images=images_from_json(row[2] if len(row) > 2 else None))
    if kind == "a":
        calls = tuple(ToolCall(id=c[0], name=c[1], arguments=c[2]) for c in row[2])
        return AssistantMessage(content=row[1], tool_calls=calls)
    if kind == "t":
        images = images_from_json(row[5] if len(row) > 5 else None)
        return ToolMessage(content=row[1], call_id=row[2], name=row[3], is_error=row[4], images=images)
    if kind == "s":
        return SystemMessage(content=row[1])
    raise ValueError(f"not a message row: {kind!r}")
