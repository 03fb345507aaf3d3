"""The pure half of an append, shared by every backend: number, validate and fold a batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from stellate.errors import ConflictError, SessionBusyError, StellateError, UsageError
from stellate.log.events import FREE_STANDING_TYPES, Event, NewEvent, validate_event
from stellate.log.invariants import Cursor, advance
from stellate.log.state import fold_slots
from stellate.store.types import Lease, SessionRecord

__all__ = [
    "CheckedEvents",
    "Fence",
    "KnownHeads",
    "PlannedAppend",
    "busy_error",
    "check_fence",
    "interleaved_range",
    "plan_append",
]

_MAX_INTERLEAVED = 10_000
"""Most events a lease holder's append looks past at the head (free-standing ones others wrote meanwhile)."""


@dataclass(frozen=True, slots=True)
class Fence:
    """The writer's side of the lease check: the token of the lease it holds (None: none) and the time now."""

    token: str | None
    now: int
    release: bool = False
    """Give the lease back once the batch is written, in the same transaction (needs ``token``)."""


def busy_error(session_id: str, lease: Lease | None, now: int, *, lost: bool = False) -> SessionBusyError:
    """The error for a writer kept out by ``lease`` (``lost``: the writer's own lease was taken)."""
    live = lease if lease is not None and lease.is_live(now) else None
    details: dict[str, Any] = {"session_id": session_id, "holder": live.owner if live else None}
    if live is not None:
        details["expires_at"] = live.expires_at
    if lost:
        message = f"this writer's lease on session {session_id} lapsed and was taken over; nothing more was written"
        return SessionBusyError(message, code="lease_lost", **details)
    holder = f" by {live.owner}" if live else ""
    return SessionBusyError(
        f"session {session_id} is busy: a turn is running there{holder}; wait for it to end or retry later",
        **details,
    )


def check_fence(record: SessionRecord, events: Sequence[NewEvent], fence: Fence) -> None:
    """Refuse a write the session's lease does not allow.

    The holder of the lease (the one whose token is on the record) may write anything. While a lease is live,
    anyone else may only add free-standing slot events (memory, insight, label...); with no live lease, anyone
    may write. A writer presenting a token that is no longer on the record lost its lease and may write nothing.

    Raises:
        SessionBusyError: ``session_busy`` or ``lease_lost``.
    """
    lease = record.lease
    if fence.token is not None:
        if lease is None or lease.token != fence.token:
            raise busy_error(record.id, lease, fence.now, lost=True)
        return
    if lease is not None and lease.is_live(fence.now) and any(e.type not in FREE_STANDING_TYPES for e in events):
        raise busy_error(record.id, lease, fence.now)


class CheckedEvents(list[NewEvent]):
    """A batch checked already: each event validated and the whole run through the invariants from ``start``.

    An import checks every line before it writes anything. `plan_append` then takes ``texts`` (what validation
    returned), ``events`` (the batch with its seqs) and ``end`` (the cursor after it) instead of checking the
    batch a second time, provided the log's head is still ``start``; elsewhere it checks the batch as usual.
    """

    def __init__(self, events: list[Event], texts: list[str], start: Cursor, end: Cursor) -> None:
        super().__init__(_new_event(e) for e in events)
        self.events, self.texts, self.start, self.end = events, texts, start, end


_make = object.__new__
_set_type, _set_data, _set_time, _set_ignorable = (
    vars(NewEvent)[name].__set__ for name in ("type", "data", "time", "ignorable")
)


def _new_event(event: Event) -> NewEvent:
    """``event`` as a `NewEvent`, without the frozen dataclass's ``__init__`` (as `stored_event` rebuilds events)."""
    new = _make(NewEvent)
    _set_type(new, event.type)
    _set_data(new, event.data)
    _set_time(new, event.time)
    _set_ignorable(new, event.ignorable)
    return new


@dataclass(frozen=True, slots=True)
class PlannedAppend:
    """Events ready to insert (with their data as JSON text) and the record after them."""

    events: list[Event]
    texts: list[str]
    record: SessionRecord


def interleaved_range(record: SessionRecord, expected_seq: int | None, fence: Fence) -> tuple[int, int] | None:
    """The seqs a lease holder's append must find free-standing to land at the head although its head is stale.

    A holder's last known head (``expected_seq``) falls behind when others add free-standing slot events
    (memory, insight, a fork's record...) beside its turn. Those may stand anywhere, so the holder's batch still
    fits after them: the backend reads the types of the events in the returned range, in the same transaction,
    and passes them to `plan_append`. None when no such check applies (the head is current, the writer holds no
    lease, or the gap is not the holder's to look past).
    """
    if expected_seq is None or expected_seq == record.next_seq or fence.token is None:
        return None
    lease = record.lease
    if lease is None or lease.token != fence.token:
        return None  # the fence refuses the write (lease_lost)
    if not record.inherited <= expected_seq < record.next_seq or record.next_seq - expected_seq > _MAX_INTERLEAVED:
        return None
    return expected_seq, record.next_seq


def plan_append(
    record: SessionRecord,
    new_events: Sequence[NewEvent],
    expected_seq: int | None,
    fence: Fence | None = None,
    *,
    interleaved: Sequence[str] | None = None,
) -> PlannedAppend:
    """Give ``new_events`` their seqs and check them against ``record``'s log (and its lease, with ``fence``).

    Args:
        record: The session's record, read under the write's lock.
        new_events: The batch, in order.
        expected_seq: The log's next seq as the writer saw it (None: wherever the head is).
        fence: The writer's side of the lease check.
        interleaved: The types of the events in `interleaved_range`, when the backend read them: if every one
            is free-standing, a stale ``expected_seq`` is no conflict and the batch lands at the head.

    Raises:
        SessionBusyError: the fence refuses the write (see `check_fence`).
        ConflictError: ``expected_seq`` is not the log's next seq (code ``seq_conflict``).
        FormatError: an event has an unknown type or bad data.
        InvariantError: an event breaks a log invariant.
        UsageError: the batch is empty.
    """
    if not new_events:
        raise UsageError("append needs at least one event")
    if fence is not None:
        check_fence(record, new_events, fence)
    if (
        expected_seq is not None
        and expected_seq != record.next_seq
        and not _only_free_standing(record, expected_seq, interleaved)
    ):
        raise ConflictError(
            f"session {record.id} is at seq {record.next_seq}, not {expected_seq}; re-read and retry",
            session_id=record.id,
            expected_seq=expected_seq,
            actual_seq=record.next_seq,
        )
    cursor = record.cursor
    events: list[Event] = []
    texts: list[str] = []
    if isinstance(new_events, CheckedEvents) and new_events.start == cursor:
        events, texts, cursor = list(new_events.events), list(new_events.texts), new_events.end
    for new in new_events if not events else ():
        texts.append(validate_event(new))
        event = Event(seq=cursor.next_seq, type=new.type, time=new.time, data=new.data, ignorable=new.ignorable)
        cursor = advance(cursor, event)
        events.append(event)
    slots = fold_slots(record.slots, events)
    lease = None if fence is not None and fence.release else record.lease
    return PlannedAppend(events, texts, replace(record, cursor=cursor, slots=slots, lease=lease))


def _only_free_standing(record: SessionRecord, expected_seq: int, interleaved: Sequence[str] | None) -> bool:
    """Whether the events between a writer's stale head and the real one are all free-standing slot events."""
    if interleaved is None or len(interleaved) != record.next_seq - expected_seq:
        return False
    return all(t in FREE_STANDING_TYPES for t in interleaved)


class KnownHeads:
    """The record a lease holder's last write left, so its next write can skip reading the session's row.

    A record is a fold of its log plus its lease, so while the row's ``next_seq`` and lease token are still the
    remembered ones, the row is the remembered record. A backend plans the write from it (`plan`) and makes its
    row update conditional on both; an update that matches no row means another writer came in between, and the
    backend takes its general path (lock, read, plan again), which also raises whatever error applies. Only
    writes under a lease use it: they are the hot path (a turn), and a stale entry cannot pass the token check.
    """

    _LIMIT = 4096

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], SessionRecord] = {}

    def plan(
        self, space: str, session_id: str, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> tuple[PlannedAppend, int] | None:
        """The write planned on the remembered record, and the ``next_seq`` the row must still have; or None."""
        known = self._records.get((space, session_id))
        if known is None or fence.token is None or known.lease is None or known.lease.token != fence.token:
            return None
        try:
            return plan_append(known, events, expected_seq, fence), known.next_seq
        except StellateError:  # the row, read on the general path, says what is wrong
            return None

    def remember(self, space: str, record: SessionRecord) -> None:
        """Keep ``record``, a row as a lease holder wrote or took it; forget it once no lease is on it."""
        key = (space, record.id)
        if record.lease is None:
            self._records.pop(key, None)
            return
        if len(self._records) >= self._LIMIT:
            self._records.clear()
        self._records[key] = record
