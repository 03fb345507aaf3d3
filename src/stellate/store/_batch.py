"""The pure half of an append, shared by every backend: number, validate and fold a batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from stellate.errors import ConflictError, UsageError
from stellate.log.events import Event, NewEvent, validate_event
from stellate.log.invariants import advance
from stellate.log.state import fold_slots
from stellate.store.types import SessionRecord

__all__ = ["PlannedAppend", "plan_append"]


@dataclass(frozen=True, slots=True)
class PlannedAppend:
    """Events ready to insert (with their data as JSON text) and the record after them."""

    events: list[Event]
    texts: list[str]
    record: SessionRecord


def plan_append(record: SessionRecord, new_events: Sequence[NewEvent], expected_seq: int | None) -> PlannedAppend:
    """Give ``new_events`` their seqs and check them against ``record``'s log.

    Raises:
        ConflictError: ``expected_seq`` is not the log's next seq (code ``seq_conflict``).
        FormatError: an event has an unknown type or bad data.
        InvariantError: an event breaks a log invariant.
        UsageError: the batch is empty.
    """
    if not new_events:
        raise UsageError("append needs at least one event")
    if expected_seq is not None and expected_seq != record.next_seq:
        raise ConflictError(
            f"session {record.id} is at seq {record.next_seq}, not {expected_seq}; re-read and retry",
            session_id=record.id,
            expected_seq=expected_seq,
            actual_seq=record.next_seq,
        )
    cursor = record.cursor
    events: list[Event] = []
    texts: list[str] = []
    for new in new_events:
        texts.append(validate_event(new))
        event = Event(seq=cursor.next_seq, type=new.type, time=new.time, data=new.data, ignorable=new.ignorable)
        cursor = advance(cursor, event)
        events.append(event)
    slots = fold_slots(record.slots, events)
    return PlannedAppend(events, texts, replace(record, cursor=cursor, slots=slots))
