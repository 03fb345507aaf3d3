"""In-memory store: for tests, demos and throwaway sessions. Nothing survives the process."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace

from stellate.errors import ConflictError, ForkError, NotFoundError
from stellate.log.events import Event, NewEvent
from stellate.store._batch import Fence, PlannedAppend, busy_error, interleaved_range, plan_append
from stellate.store.base import BaseStore
from stellate.store.blobs import BLOB_GRACE_MS, Blob, blob_hash, blob_not_found, referenced_hashes
from stellate.store.digests import SessionDigest, TopologyNode, bad_cursor, digest_of, node_of
from stellate.store.erasure import Dependents, ErasePlan, Tombstone, inherited_parts, plan_erasure
from stellate.store.history import (
    HistoryBounds,
    HistoryEntry,
    HistoryPage,
    HistoryWindow,
    NewHistoryEntry,
    pick,
    prune_due,
    signal_locally,
)
from stellate.store.search import SearchPage, SearchQuery, scan_messages
from stellate.store.segments import StoredSegment
from stellate.store.types import Claim, Lease, SessionId, SessionRecord

__all__ = ["MemoryStore"]


class MemoryStore(BaseStore):
    """A store in a Python dict; each session holds its own events only, forks read by reference."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[SessionId, SessionRecord] = {}
        self._events: dict[SessionId, list[Event]] = {}
        self._spaces: dict[SessionId, str] = {}
        self._order: dict[str, list[SessionId]] = {}
        """Each space's sessions in creation order (erased ones stay, skipped), so a page starts where it left off."""
        self._position: dict[SessionId, int] = {}
        self._lock = asyncio.Lock()
        self._segments_by_session: dict[SessionId, dict[tuple[int, int], StoredSegment]] = {}
        self._claims: dict[str, Claim] = {}
        self._history: dict[str, list[HistoryEntry]] = {}
        self._history_heads: dict[str, int] = {}
        self._tombstones: dict[str, list[Tombstone]] = {}
        self.history_bounds = HistoryBounds()
        """What the event history keeps (`stellate.store.history`)."""
        self._blobs: dict[tuple[str, str], Blob] = {}

    @classmethod
    async def open(cls, url: str = "memory://") -> MemoryStore:
        """An empty store (the URL is accepted for symmetry with the SQL backends)."""
        return cls()

    async def _insert_session(self, record: SessionRecord, planned: PlannedAppend | None) -> None:
        async with self._lock:
            if record.id in self._records or record.id in self._erased_ids():
                raise ConflictError(f"a session {record.id!r} already exists", code="session_exists")
            if record.inherited and self._visible(record.source_id or SessionId("")) is None:
                raise ForkError(f"fork source {record.source_id!r} does not exist", code="source_not_found")
            if record.parent_id is not None and self._visible(record.parent_id) is None:
                raise NotFoundError(f"no session {record.parent_id!r}", session_id=record.parent_id)
            self._records[record.id] = record
            self._events[record.id] = list(planned.events) if planned else []
            self._spaces[record.id] = self.space
            order = self._order.setdefault(self.space, [])
            self._position[record.id] = len(order)
            order.append(record.id)

    async def _append_planned(
        self, session_id: SessionId, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> list[Event]:
        async with self._lock:
            record = self._visible(session_id)
            if record is None:
                raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
            gap = interleaved_range(record, expected_seq, fence)
            own = self._events[session_id]
            types = (
                None if gap is None else [e.type for e in own[gap[0] - record.inherited : gap[1] - record.inherited]]
            )
            planned = plan_append(record, events, expected_seq, fence, interleaved=types)
            own.extend(planned.events)
            self._records[session_id] = planned.record
            return planned.events

    async def _append_batches(
        self, batches: Mapping[SessionId, Sequence[NewEvent]], fence: Fence
    ) -> dict[SessionId, list[Event]]:
        async with self._lock:
            planned: dict[SessionId, PlannedAppend] = {}
            for session_id, events in batches.items():
                record = self._visible(session_id)
                if record is None:
                    raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
                planned[session_id] = plan_append(record, events, None, fence)
            for session_id, plan in planned.items():
                self._events[session_id].extend(plan.events)
                self._records[session_id] = plan.record
            return {sid: plan.events for sid, plan in planned.items()}

    async def _take_lease(self, session_id: SessionId, lease: Lease, now: int) -> SessionRecord | None:
        async with self._lock:
            record = self._visible(session_id)
            if record is None or (record.lease is not None and record.lease.is_live(now)):
                return None
            self._records[session_id] = record = replace(record, lease=lease)
            return record

    async def _renew_lease(self, session_id: SessionId, token: str, expires_at: int) -> bool:
        async with self._lock:
            record = self._records.get(session_id)
            if record is None or record.lease is None or record.lease.token != token:
                return False
            self._records[session_id] = replace(record, lease=replace(record.lease, expires_at=expires_at))
            return True

    async def _try_claim(self, claim: Claim, now: int) -> bool:
        current = self._claims.get(claim.key)
        if current is not None and current.expires_at > now:
            return False
        self._claims[claim.key] = claim
        return True

    async def _release_claim(self, key: str, token: str) -> None:
        current = self._claims.get(key)
        if current is not None and current.token == token:
            del self._claims[key]

    async def _release_lease(self, session_id: SessionId, token: str) -> None:
        async with self._lock:
            record = self._records.get(session_id)
            if record is not None and record.lease is not None and record.lease.token == token:
                self._records[session_id] = replace(record, lease=None)

    async def _read_own(
        self,
        session_id: SessionId,
        start: int,
        stop: int,
        types: Sequence[str] | None,
        reverse: bool,
        limit: int | None,
    ) -> list[Event]:
        record = self._records.get(session_id)
        if record is None:
            return []  # erased since a caller cached the lineage that led here
        own = self._events[session_id]
        lo, hi = max(start - record.inherited, 0), max(stop - record.inherited, 0)
        picked = own[lo:hi]
        if types is not None:
            wanted = set(types)
            picked = [e for e in picked if e.type in wanted]
        if reverse:
            picked.reverse()
        return picked if limit is None else picked[:limit]

    async def _get_record(self, session_id: SessionId) -> SessionRecord | None:
        return self._visible(session_id)

    def _visible(self, session_id: SessionId) -> SessionRecord | None:
        return self._records.get(session_id) if self._spaces.get(session_id) == self.space else None

    async def list_sessions(self, *, parent_id: SessionId | None = None, roots: bool = False) -> list[SessionRecord]:
        """All sessions in creation order, or the children of ``parent_id``, or the roots."""
        records = [r for r in self._records.values() if self._spaces[r.id] == self.space]
        if parent_id is not None:
            return [r for r in records if r.parent_id == parent_id]
        if roots:
            return [r for r in records if r.parent_id is None]
        return records

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """A keyset page of `list_sessions` (see `Store.list_sessions_page`)."""
        order, start = self._order.get(self.space, []), self._page_start(after)
        page: list[SessionRecord] = []
        for index in range(start, len(order)):
            record = self._records.get(order[index])
            if record is not None:
                page.append(record)
                if len(page) >= limit:
                    break
        return page

    def _page_start(self, after: SessionId | None) -> int:
        """Where a page continuing after ``after`` starts in the space's creation order (``bad_cursor`` if none)."""
        if after is None:
            return 0
        if self._visible(after) is None:
            raise bad_cursor(after)
        return self._position[after] + 1

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A keyset page of the forest's nodes, childless (see `Store.list_nodes_page`)."""
        return [node_of(r) for r in await self.list_sessions_page(after=after, limit=limit)]

    async def list_digests_page(
        self,
        *,
        after: SessionId | None = None,
        limit: int = 100,
        parent_id: SessionId | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """A keyset page of the digests (see `Store.list_digests_page`): it starts at the session after ``after``."""
        order, start = self._order.get(self.space, []), self._page_start(after)
        page: list[SessionDigest] = []
        for index in range(start, len(order)):
            record = self._records.get(order[index])
            if record is None or (parent_id is not None and record.parent_id != parent_id):
                continue
            if status is None or record.slots.status == status:
                page.append(digest_of(record))
                if len(page) >= limit:
                    break
        return page

    async def _read_segment_rows(self, session_id: SessionId, max_end: int | None) -> list[StoredSegment]:
        rows = self._segments_by_session.get(session_id, {}).values()
        return [row for row in rows if max_end is None or row.end <= max_end]

    async def _write_segment_rows(self, segments: Sequence[StoredSegment]) -> None:
        for segment in segments:
            if segment.session_id not in self._records:
                continue  # erased meanwhile: a segment never outlives its session
            self._segments_by_session.setdefault(segment.session_id, {})[segment.start, segment.end] = segment

    async def append_history(self, entries: Sequence[NewHistoryEntry]) -> list[HistoryEntry]:
        """Append rows to this space's event history (see `stellate.store.history.EventHistory`)."""
        if not entries:
            return []
        now, bounds = self.clock(), self.history_bounds
        async with self._lock:
            rows = self._history.setdefault(self.space, [])
            last = self._history_heads.get(self.space, 0)
            added = [HistoryEntry(id=last + n, time=now, kind=e.kind, data=e.data) for n, e in enumerate(entries, 1)]
            rows.extend(added)
            self._history_heads[self.space] = added[-1].id
            if prune_due(added[-1].id, len(added)):
                window = HistoryWindow.of(None, None, added[-1].id, now, bounds)
                rows[:] = [e for e in rows if e.id > window.low and e.time >= window.min_time]
        signal_locally(self.signals, added[-1].id, self.space)
        return added

    async def read_history(
        self,
        *,
        after: int | None = None,
        before: int | None = None,
        limit: int = 100,
        kinds: Sequence[str] | None = None,
    ) -> HistoryPage:
        """This space's event history in an id range (see `stellate.store.history.EventHistory`)."""
        last_id = self._history_heads.get(self.space, 0)
        window = HistoryWindow.of(after, before, last_id, self.clock(), self.history_bounds)
        rows = pick(self._history.get(self.space, []), window, limit, kinds, newest=after is None)
        return HistoryPage(entries=rows, last_id=last_id)

    # -- erasure (stellate.store.erasure) ---------------------------------------------------------

    async def _erase(
        self, targets: tuple[SessionId, ...], dependents: Dependents | None, by: str, now: int, dry_run: bool
    ) -> ErasePlan:
        async with self._lock:
            space_records = [r for r in self._records.values() if self._spaces[r.id] == self.space]
            lineage = {r.id: (r.source_id, r.inherited) for r in space_records}
            plan = plan_erasure(lineage, targets, dependents)
            for sid in plan.erased:
                lease = self._records[sid].lease
                if lease is not None and lease.is_live(now):
                    raise busy_error(sid, lease, now)
            if dry_run:
                return plan
            for sid in plan.kept:
                parts = inherited_parts(lineage, sid)
                prefix = [e for holder, lo, hi in parts for e in self._own_range(holder, lo, hi)]
                self._events[sid] = sorted(prefix, key=lambda e: e.seq) + self._events[sid]
                self._records[sid] = replace(self._records[sid], inherited=0)
            for sid in plan.erased:
                self._erase_one(sid, by, now)
            return plan

    def _own_range(self, session_id: SessionId, start: int, stop: int) -> list[Event]:
        record = self._records[session_id]
        return self._events[session_id][max(start - record.inherited, 0) : max(stop - record.inherited, 0)]

    def _erase_one(self, session_id: SessionId, by: str, now: int) -> None:
        """Drop every trace of one session but its tombstone (the side tables of this backend, in one place)."""
        record = self._records.pop(session_id)
        del self._events[session_id], self._spaces[session_id], self._position[session_id]
        self._segments_by_session.pop(session_id, None)
        quoted = f'"{session_id}"'
        for rows in self._history.values():
            rows[:] = [e for e in rows if quoted not in e.data]
        for key in [k for k in self._claims if session_id in k]:
            del self._claims[key]
        self._tombstones.setdefault(self.space, []).append(
            Tombstone(
                id=session_id,
                parent_id=record.parent_id,
                source_id=record.source_id,
                fork_seq=record.fork_seq,
                created_at=record.created_at,
                erased_at=now,
                erased_by=by,
            )
        )

    def _erased_ids(self) -> set[SessionId]:
        return {t.id for stones in self._tombstones.values() for t in stones}

    async def list_tombstones(self) -> list[Tombstone]:
        """The space's tombstones, oldest erase first."""
        return list(self._tombstones.get(self.space, []))

    async def put_blob(self, data: bytes, *, media_type: str) -> str:
        """Store ``data`` once per space; putting it again refreshes its age (see `stellate.store.blobs`)."""
        sha256 = blob_hash(data)
        self._blobs[self.space, sha256] = Blob(sha256=sha256, media_type=media_type, data=data, created_at=self.clock())
        return sha256

    async def get_blob(self, sha256: str) -> Blob:
        """The blob under ``sha256``; raises `NotFoundError` (code ``blob_not_found``) when there is none."""
        blob = self._blobs.get((self.space, sha256))
        if blob is None:
            raise blob_not_found(sha256)
        return blob

    async def has_blobs(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` this space holds."""
        return {h for h in hashes if (self.space, h) in self._blobs}

    async def delete_unreferenced_blobs(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """Delete the blobs no event of the space refers to, put more than ``grace_ms`` ago."""
        async with self._lock:
            events = (e.data for sid, own in self._events.items() if self._spaces[sid] == self.space for e in own)
            kept = referenced_hashes(e for e in events if "images" in e)
            put_before = self.clock() - grace_ms
            doomed = sorted(
                sha
                for (space, sha), blob in self._blobs.items()
                if space == self.space and sha not in kept and blob.created_at <= put_before
            )
            for sha256 in doomed:
                del self._blobs[self.space, sha256]
        return doomed

    async def search_messages(self, query: SearchQuery) -> SearchPage:
        """Search this space's message text by reading every message (see `stellate.store.search`)."""
        records = await self.list_sessions()
        return scan_messages(((r, self._events[r.id]) for r in records), query)

    async def close(self) -> None:
        """Nothing to release."""
