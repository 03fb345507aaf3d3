"""The logic every backend shares (`BaseStore`), under the `Store` protocol (`stellate.store.protocol`).

A backend implements a handful of primitives (`BaseStore`'s abstract methods): insert a session with
its first events, append a planned batch atomically, read a range of its *own* events, list sessions, and
take, renew and release leases and claims.
Everything with rules in it — fork resolution, reading through fork chains, repair, topology — lives
here once, so the backends cannot drift apart. Leases and claims, with their own primitives, live in
`stellate.store.leases`, which `BaseStore` inherits.
"""

from __future__ import annotations

import abc
import copy
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Self

from stellate.errors import ConflictError, ForkError, NotFoundError, SessionBusyError, UsageError
from stellate.log.events import Event, NewEvent, now_ms
from stellate.log.fork import check_explicit_boundary, clip_to_completed_turn, resolve_anchor
from stellate.log.invariants import Cursor
from stellate.log.repair import repair_events
from stellate.store._batch import Fence, PlannedAppend, plan_append
from stellate.store.digests import SessionDigest, digest_of
from stellate.store.erasure import ErasureStore
from stellate.store.leases import DEFAULT_LEASE_TTL, LeaseStore, lease_owner
from stellate.store.protocol import Store
from stellate.store.segments import StoredSegment
from stellate.store.signals import LOG_CHANNEL, LocalSignals, Signals, log_payload
from stellate.store.types import (
    Anchor,
    Boundary,
    CompletedTurn,
    ForkRequest,
    Lease,
    SessionId,
    SessionRecord,
)

__all__ = ["DEFAULT_LEASE_TTL", "DEFAULT_SPACE", "BaseStore", "Store", "lease_owner", "new_session_id"]

DEFAULT_SPACE = "default"
"""The space of a store handle that was not scoped with `BaseStore.in_space`."""


def _marker_at_head(cursor: Cursor, types: tuple[str, ...]) -> Event | None:
    """The newest turn marker of ``types`` in a log, known from its cursor (its seq only for ``turn/end``)."""
    if cursor.turn_open and "turn/start" in types:
        return Event(seq=-1, type="turn/start", time=0, data={"turn": cursor.last_turn})
    if cursor.last_end_seq < 0 or "turn/end" not in types:
        return None
    turn = cursor.last_turn - 1 if cursor.turn_open else cursor.last_turn
    return Event(seq=cursor.last_end_seq, type="turn/end", time=0, data={"turn": turn, "reason": "completed"})


def new_session_id() -> SessionId:
    """A fresh, time-sortable session id."""
    return SessionId(f"s-{now_ms():012x}-{uuid.uuid4().hex[:12]}")


#: Sessions whose lineage (fork source, inherited length) a store remembers.
_LINEAGE_CACHE_SIZE = 4096


@dataclass(frozen=True, slots=True)
class _Lineage:
    source_id: SessionId | None
    inherited: int


class BaseStore(LeaseStore, ErasureStore):
    """Shared logic over a backend's primitives; subclass and implement the abstract methods."""

    def __init__(self) -> None:
        # Lineage changes only when an erase gives a dependent its own copy (`_lineage_went_stale` notices), so
        # reading through a fork chain needs no query per level.
        self._lineage: dict[SessionId, _Lineage] = {}
        self.clock: Callable[[], int] = now_ms
        """Epoch-ms clock that lease expiry is judged by (replaceable in tests)."""
        self.signals: Signals = LocalSignals()
        """Wake-ups between the processes sharing this store: every append signals ``log`` (see
        `stellate.store.signals`); within this process only, unless the backend carries them further."""
        self.space = DEFAULT_SPACE
        """The space (tenant) this handle sees: it reads, lists, forks and creates only that space's sessions."""

    def in_space(self, space: str) -> Self:
        """A handle on the same database that sees only the sessions of ``space`` (and creates them there).

        It shares this store's connections: close the store, not its views. Session ids stay unique across
        spaces, so an id taken in another space is refused (``session_exists``) without revealing anything else.
        """
        view = copy.copy(self)
        view.space = space
        view._lineage = {}  # per view: a cached lineage must never let one space read another's events
        return view

    # -- primitives a backend implements ---------------------------------------------------------

    @abc.abstractmethod
    async def _insert_session(self, record: SessionRecord, planned: PlannedAppend | None) -> None:
        """Insert the record and its first events atomically; raise ConflictError(session_exists) on a taken id."""

    @abc.abstractmethod
    async def _append_planned(
        self, session_id: SessionId, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> list[Event]:
        """In one transaction: lock and read the record, `plan_append` (with ``fence``), insert, update the record."""

    @abc.abstractmethod
    async def _read_own(
        self,
        session_id: SessionId,
        start: int,
        stop: int,
        types: Sequence[str] | None,
        reverse: bool,
        limit: int | None,
    ) -> list[Event]:
        """Own events of one session (no inheritance) with ``start <= seq < stop``."""

    @abc.abstractmethod
    async def _get_record(self, session_id: SessionId) -> SessionRecord | None:
        """The record, or None."""

    @abc.abstractmethod
    async def list_sessions(self, *, parent_id: SessionId | None = None, roots: bool = False) -> list[SessionRecord]:
        """All sessions in creation order, or the children of ``parent_id``, or the roots."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and threads."""

    # -- shared behaviour ------------------------------------------------------------------------

    async def ping(self) -> None:
        """Check that the store answers (for readiness probes).

        Raises:
            StoreError: the database cannot be reached or the store is closed.
        """
        await self._get_record(SessionId(""))

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        """A session's record.

        Raises:
            NotFoundError: no session has this id.
        """
        record = await self._get_record(session_id)
        if record is None:
            raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
        if record.id not in self._lineage:  # a cold read of the log next needs no second read of the record
            self._remember_lineage(record.id, _Lineage(record.source_id, record.inherited))
        return record

    async def create_session(
        self,
        *,
        session_id: SessionId | None = None,
        parent_id: SessionId | None = None,
        fork: ForkRequest | None = None,
        events: Sequence[NewEvent] = (),
        source_id: SessionId | None = None,
        fork_seq: int | None = None,
    ) -> SessionRecord:
        """Create a session; with ``fork`` it reads the source's prefix by reference (O(1) in its length).

        Raises:
            ForkError: ``child_exists`` (checked first), ``source_not_found``, ``invalid_boundary``,
                ``open_turn`` or ``fork_unavailable``.
            ConflictError: ``session_exists`` when the id is taken (without ``fork``).
            NotFoundError: the topology parent does not exist.
            FormatError, InvariantError: a first event is bad; nothing is created.

        ``source_id`` and ``fork_seq`` record the provenance of a session whose history was *copied*
        (an import, a fork with selected context); they are ignored when ``fork`` is given.
        """
        sid = session_id if session_id is not None else new_session_id()
        if session_id is not None and await self._get_record(sid) is not None:
            if fork is not None:
                raise ForkError(f"a session {sid!r} already exists", code="child_exists", session_id=sid)
            raise ConflictError(f"a session {sid!r} already exists", code="session_exists", session_id=sid)
        if parent_id is not None:
            await self.get_session(parent_id)
        record = SessionRecord(id=sid, parent_id=parent_id, source_id=source_id, fork_seq=fork_seq, created_at=now_ms())
        if fork is not None:
            record = await self._fork_record(record, fork)
        planned = plan_append(record, events, None) if events else None
        await self._insert_session(planned.record if planned else record, planned)
        self._remember_lineage(sid, _Lineage(record.source_id, record.inherited))
        return planned.record if planned else record

    async def _fork_record(self, record: SessionRecord, fork: ForkRequest) -> SessionRecord:
        source = await self._get_record(fork.source_id)
        if source is None:
            raise ForkError(f"fork source {fork.source_id!r} does not exist", code="source_not_found")
        boundary = await self._resolve_boundary(source, fork)
        if boundary is None:
            return replace(record, source_id=source.id)
        last_end = await self._last(source, ("turn/end",), boundary)
        turns = last_end.data["turn"] if last_end else 0
        cursor = Cursor(
            next_seq=boundary + 1,
            last_turn=turns,
            last_end_seq=last_end.seq if last_end else -1,
            inherited_turns=turns,
        )
        return replace(record, source_id=source.id, fork_seq=boundary, inherited=boundary + 1, cursor=cursor)

    async def _resolve_boundary(self, source: SessionRecord, fork: ForkRequest) -> int | None:
        point, next_seq = fork.point, source.next_seq
        if isinstance(point, Boundary):
            seq = point.seq
            in_range = isinstance(seq, int) and 0 <= seq < next_seq
            marker = await self._last(source, ("turn/start", "turn/end"), seq) if in_range else None
            return check_explicit_boundary(seq, next_seq=next_seq, last_marker=marker)
        if isinstance(point, CompletedTurn):
            if not source.cursor.turn_open:
                return next_seq - 1 if next_seq else None
            return clip_to_completed_turn(await self._last(source, ("turn/end",), next_seq - 1))
        if not isinstance(point, Anchor):
            raise UsageError(f"not a fork point: {point!r}")
        at = point.at_seq
        marker = end = None
        if isinstance(at, int) and 0 <= at < next_seq:
            marker = await self._last(source, ("turn/start", "turn/end"), at)
            end = await self._first(source.id, ("turn/end",), at)
        return resolve_anchor(
            at,
            next_seq=next_seq,
            turn_open=source.cursor.turn_open,
            marker_at_anchor=marker,
            end_after_anchor=end,
            last_turn_end=await self._last(source, ("turn/end",), next_seq - 1),
        )

    async def _last(self, source: SessionRecord, types: tuple[str, ...], at_or_before: int) -> Event | None:
        """The last event of ``types`` at or before a seq; at the head it is read off the cursor (no query)."""
        if at_or_before >= source.next_seq - 1:
            return _marker_at_head(source.cursor, types)
        found = await self.read_events(source.id, stop=at_or_before + 1, types=types, reverse=True, limit=1)
        return found[0] if found else None

    async def _first(self, session_id: SessionId, types: tuple[str, ...], at_or_after: int) -> Event | None:
        found = await self.read_events(session_id, start=at_or_after, types=types, limit=1)
        return found[0] if found else None

    async def append(
        self,
        session_id: SessionId,
        events: Sequence[NewEvent],
        *,
        expected_seq: int | None = None,
        lease: Lease | None = None,
        release_lease: bool = False,
    ) -> list[Event]:
        """Append a batch atomically and return it with seqs.

        Args:
            session_id: The session.
            events: The batch, in order.
            expected_seq: The log's next seq as the writer saw it; a mismatch refuses the batch, unless the
                writer holds the lease and every event since is free-standing (memory, insight, a fork's
                record...): the batch then lands at the head, and the events returned carry the seqs it got.
                None places the batch wherever the head is, in the same statement.
            lease: The lease the writer holds; without one, a session another writer holds accepts only
                free-standing slot events (memory, insight, label, system prompt).
            release_lease: Give ``lease`` back in the same transaction as the batch (a writer's last write
                saves a separate `release_lease`); a refused batch releases nothing.

        Raises:
            NotFoundError: unknown session.
            SessionBusyError: another writer holds the session (``session_busy``), or ``lease`` was taken over
                (``lease_lost``).
            ConflictError: ``expected_seq`` is stale (code ``seq_conflict``).
            FormatError, InvariantError: an event is bad; nothing is written.
            UsageError: ``release_lease`` without a ``lease``.
        """
        if release_lease and lease is None:
            raise UsageError("release_lease needs the lease to release")
        fence = Fence(lease.token if lease is not None else None, self.clock(), release_lease)
        written = await self._append_planned(session_id, events, expected_seq, fence)
        self._signal_locally(session_id, written)
        return written

    def _signal_locally(self, session_id: SessionId, written: Sequence[Event]) -> None:
        """Tell this process's subscribers that a log grew (a backend that signals in its commit skips this)."""
        if written and isinstance(self.signals, LocalSignals):
            self.signals.deliver(LOG_CHANNEL, [log_payload(session_id, written[-1].seq + 1)])

    async def append_batches(self, batches: Mapping[SessionId, Sequence[NewEvent]]) -> dict[SessionId, list[Event]]:
        """Append to several sessions in one transaction: all batches land, or none.

        Raises:
            NotFoundError: a session is unknown.
            FormatError, InvariantError: an event is bad; nothing is written anywhere.
        """
        if not batches:
            return {}
        written = await self._append_batches(batches, Fence(None, self.clock()))
        for session_id, events in written.items():
            self._signal_locally(session_id, events)
        return written

    @abc.abstractmethod
    async def _append_batches(
        self, batches: Mapping[SessionId, Sequence[NewEvent]], fence: Fence
    ) -> dict[SessionId, list[Event]]:
        """Backend primitive of `append_batches`: one transaction across sessions, each batch checked by ``fence``."""

    async def read_events(
        self,
        session_id: SessionId,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Sequence[str] | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> list[Event]:
        """Events of the session's whole log (inherited prefix included) with ``start <= seq < stop``.

        Raises:
            NotFoundError: unknown session.
        """
        if limit is not None and limit <= 0:
            return []
        segments = await self._segments(session_id, max(start, 0), stop)
        if reverse:
            segments.reverse()
        out: list[Event] = []
        empty_source = False
        for sid, lo, hi in segments:
            if lo >= hi:
                continue
            remaining = None if limit is None else limit - len(out)
            found = await self._read_own(sid, lo, hi, types, reverse, remaining)
            empty_source |= not found and sid != session_id
            out.extend(found)
            if limit is not None and len(out) >= limit:
                break
        if empty_source and await self._lineage_went_stale(segments):
            return await self.read_events(session_id, start=start, stop=stop, types=types, reverse=reverse, limit=limit)
        return out

    async def _lineage_went_stale(self, segments: Sequence[tuple[SessionId, int, int]]) -> bool:
        """Whether a cached lineage of this chain changed (a source erased elsewhere, its dependents kept).

        Only an erased source reads as empty, so this runs only when a source's part came back empty.
        """
        for sid, _, _ in segments:
            record = await self._get_record(sid)
            if record is None or self._lineage.get(sid) != _Lineage(record.source_id, record.inherited):
                self._lineage.clear()
                return True
        return False

    def _forget_lineage(self) -> None:
        self._lineage.clear()

    async def _segments(self, session_id: SessionId, start: int, stop: int | None) -> list[tuple[SessionId, int, int]]:
        """Which session physically holds each part of ``[start, stop)``, oldest part first."""
        hi = stop if stop is not None else 1 << 62
        segments: list[tuple[SessionId, int, int]] = []
        current: SessionId | None = session_id
        while current is not None and hi > start:
            lineage = await self._lineage_of(current)
            segments.append((current, max(start, lineage.inherited), hi))
            hi = min(hi, lineage.inherited)
            current = lineage.source_id if lineage.inherited else None
        segments.reverse()
        return segments

    async def _lineage_of(self, session_id: SessionId) -> _Lineage:
        lineage = self._lineage.get(session_id)
        if lineage is None:
            record = await self.get_session(session_id)
            lineage = self._remember_lineage(session_id, _Lineage(record.source_id, record.inherited))
        return lineage

    def _remember_lineage(self, session_id: SessionId, lineage: _Lineage) -> _Lineage:
        # Bounded (issue 22): cleared when full, since a lineage is read again from its record at no risk.
        if len(self._lineage) >= _LINEAGE_CACHE_SIZE:
            self._lineage.clear()
        self._lineage[session_id] = lineage
        return lineage

    async def repair(self, session_id: SessionId, *, lease: Lease | None = None) -> list[Event]:
        """Close a turn left open by a dead writer (idempotent; never truncates).

        A turn is dead when no live lease covers it: without ``lease``, repair takes the session's lease for
        itself (and refuses a session a live writer holds); with ``lease``, the caller holds it already.

        Raises:
            SessionBusyError: a live writer holds the session, or ``lease`` was taken over.
        """
        record = await self.get_session(session_id)
        if not record.cursor.turn_open or record.cursor.paused:  # a paused turn waits for approvals: not dead
            return []
        if lease is not None:
            return await self._repair_held(session_id, lease)
        lease, record = await self.acquire_lease(session_id, owner=lease_owner("repair"), ttl=DEFAULT_LEASE_TTL)
        try:
            return await self._repair_held(session_id, lease) if record.cursor.turn_open else []
        finally:
            await self.release_lease(session_id, lease)

    async def _repair_held(self, session_id: SessionId, lease: Lease) -> list[Event]:
        while True:
            record = await self.get_session(session_id)
            if not record.cursor.turn_open or record.cursor.paused:
                return []
            replies = await self.read_events(session_id, types=("assistant/message",), reverse=True, limit=1)
            reply = replies[0] if replies else None
            names = {c["id"]: c["name"] for c in reply.data["tool_calls"]} if reply else {}
            tail = await self.read_events(session_id, reverse=True, limit=1)
            closers = repair_events(record.cursor, call_names=names, time=tail[0].time if tail else now_ms())
            try:
                return await self.append(session_id, closers, expected_seq=record.next_seq, lease=lease)
            except SessionBusyError:
                raise
            except ConflictError:
                continue  # a free-standing slot event landed in between: plan again on the new head

    # -- topology --------------------------------------------------------------------------------

    async def ancestors(self, session_id: SessionId) -> list[SessionRecord]:
        """Topology ancestors, parent first, root last."""
        out: list[SessionRecord] = []
        record = await self.get_session(session_id)
        while record.parent_id is not None:
            record = await self.get_session(record.parent_id)
            out.append(record)
        return out

    async def subtree(self, session_id: SessionId) -> list[SessionRecord]:
        """The session and all its topology descendants, breadth first."""
        out = [await self.get_session(session_id)]
        i = 0
        while i < len(out):
            out.extend(await self.list_sessions(parent_id=out[i].id))
            i += 1
        return out

    async def list_digests(self) -> list[SessionDigest]:
        """Every session's digest, in creation order (backends read only the digest's columns)."""
        return [digest_of(r) for r in await self.list_sessions()]

    # -- derived fold segments (stellate.store.segments) -----------------------------------------

    async def read_fold_segments(self, session_id: SessionId, *, stop: int | None = None) -> list[StoredSegment]:
        """The stored fold segments a cold open of ``session_id`` may use (those ending at or before ``stop``).

        Its own, and those of its fork sources that end within the prefix it inherits.

        Raises:
            NotFoundError: unknown session.
        """
        out: list[StoredSegment] = []
        for sid, _, hi in await self._segments(session_id, 0, stop):
            out.extend(await self._read_segment_rows(sid, stop if sid == session_id else hi))
        return out

    async def write_fold_segments(self, segments: Sequence[StoredSegment]) -> None:
        """Store fold segments, replacing one stored for the same session and range (it may be damaged)."""
        if segments:
            await self._write_segment_rows(segments)

    async def _read_segment_rows(self, session_id: SessionId, max_end: int | None) -> list[StoredSegment]:
        """A session's own stored segments (ending at or before ``max_end``); none in a backend without them."""
        return []

    async def _write_segment_rows(self, segments: Sequence[StoredSegment]) -> None:
        """Insert or replace segments; a backend without them keeps nothing."""
        return None

    async def __aenter__(self) -> BaseStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
