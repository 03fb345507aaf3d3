"""SQLite store, the default: one file, WAL, a busy timeout, and two connections per process.

Short calls run on the event loop's own connection when SQLite serves them at once, the rest on one store thread
(`stellate.store.sqlite_connections`), so the event loop never waits for a lock, an fsync or a large read.
Across processes, ``BEGIN IMMEDIATE`` takes SQLite's write lock before the record is read, so two processes
appending to one session serialize instead of interleaving; the expected-seq check catches a caller working
from a stale head.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stellate.errors import ConflictError, SchemaError, StoreError, UsageError
from stellate.log.events import Event, NewEvent
from stellate.store._batch import Fence, KnownHeads, PlannedAppend
from stellate.store._blob_sql import blob_migration
from stellate.store._erase_sql import TOMBSTONES_MIGRATION, select_tombstones_sql, tombstone_from_row
from stellate.store._history_sql import (
    entries_of,
    head_sql,
    prune_params,
    prune_sql,
    read_params,
    read_sql,
    upsert_head_sql,
)
from stellate.store._sql import (
    SELECTED_COLUMNS,
    SPACE_MIGRATION,
    WRITTEN_COLUMNS,
    claim_sql,
    digest_from_row,
    event_from_row,
    event_rows,
    lease_sql,
    record_from_row,
    record_row,
    select_digests_sql,
    select_events_sql,
    select_sessions_sql,
)
from stellate.store.base import BaseStore
from stellate.store.digests import SessionDigest
from stellate.store.erasure import Dependents, ErasePlan, Tombstone
from stellate.store.history import (
    HistoryBounds,
    HistoryEntry,
    HistoryPage,
    HistoryWindow,
    NewHistoryEntry,
    prune_due,
    signal_locally,
)
from stellate.store.search import SearchPage, SearchQuery
from stellate.store.segments import StoredSegment
from stellate.store.sqlite_append import INSERT_EVENTS, append_in_transaction, write_one
from stellate.store.sqlite_blobs import SqliteBlobs
from stellate.store.sqlite_connections import SqliteConnections, Synchronous, WriteTransaction, translate
from stellate.store.sqlite_erase import check_lineage_exists, erase_sync
from stellate.store.sqlite_files import sqlite_path
from stellate.store.sqlite_listing import SqliteListing
from stellate.store.sqlite_search import SEARCH_MIGRATION, index_planned, search_sync
from stellate.store.types import Claim, Lease, SessionId, SessionRecord

__all__ = ["MIGRATIONS", "SqliteStore", "Synchronous", "sqlite_path"]


_MAX_SEQ = 1 << 62
_SHORT_BATCH = 64
"""Appends and reads of up to this many events may run on the loop's connection; larger ones use the thread."""
_SHORT_READ = 256
"""A read of a seq range no wider than this may run on the loop's connection (a cold open's tail, a catch-up)."""
_SHORT_SEGMENT_SPAN = 2048
"""Segments of a log of up to this many events (a few rows) may be read on the loop's connection."""

#: Append-only: never edit a released entry, add a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        parent_id TEXT REFERENCES sessions(id),
        source_id TEXT,
        fork_seq INTEGER,
        inherited INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        label TEXT NOT NULL,
        status TEXT NOT NULL,
        system_prompt TEXT,
        memory TEXT,
        insight TEXT,
        config TEXT NOT NULL,
        last_activity INTEGER NOT NULL,
        turn_count INTEGER NOT NULL,
        next_seq INTEGER NOT NULL,
        cursor TEXT NOT NULL
    );
    CREATE INDEX sessions_parent ON sessions(parent_id);
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        time INTEGER NOT NULL,
        data TEXT NOT NULL,
        ignorable INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    """,
    # The session's lease: one writer per session across processes (all NULL when nobody holds it).
    """
    ALTER TABLE sessions ADD COLUMN lease_owner TEXT;
    ALTER TABLE sessions ADD COLUMN lease_token TEXT;
    ALTER TABLE sessions ADD COLUMN lease_acquired_at INTEGER;
    ALTER TABLE sessions ADD COLUMN lease_expires_at INTEGER;
    """,
    # Claims on background work (a scheduled consolidation), so one process does it.
    """
    CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, token TEXT NOT NULL, expires_at INTEGER NOT NULL);
    """,
    SPACE_MIGRATION,
    # Derived fold segments (stellate.store.segments): dropping the table's rows costs speed, never correctness.
    """
    CREATE TABLE fold_segments (
        session_id TEXT NOT NULL,
        start_seq INTEGER NOT NULL,
        end_seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, start_seq, end_seq)
    );
    """,
    # Whether a turn is open, beside the cursor that says so: digest listings read it without parsing JSON.
    """
    ALTER TABLE sessions ADD COLUMN turn_open INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET turn_open = 1 WHERE json_extract(cursor, '$.turn_open')
    """,
    # The event history (stellate.store.history): opaque rows per space, ids handed out by the space's head row.
    """
    CREATE TABLE event_history (
        space TEXT NOT NULL,
        id INTEGER NOT NULL,
        time INTEGER NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (space, id)
    ) WITHOUT ROWID;
    CREATE TABLE event_history_heads (space TEXT PRIMARY KEY, last_id INTEGER NOT NULL) WITHOUT ROWID;
    """,
    # What remains of erased sessions (stellate.store.erasure).
    TOMBSTONES_MIGRATION,
    SEARCH_MIGRATION,  # message search (stellate.store.sqlite_search): FTS5 trigrams, filled from the stored messages
    # Blobs (stellate.store.blobs): images stored once per space under their sha256, referred to by events.
    blob_migration("BLOB"),
)

_SELECT_RECORD = f"SELECT {', '.join(SELECTED_COLUMNS)} FROM sessions"
_LEASE = lease_sql("?")
_CLAIM = claim_sql("?")
_INSERT_RECORD = (
    f"INSERT INTO sessions ({', '.join(WRITTEN_COLUMNS)}, space) VALUES ({', '.join('?' * (len(WRITTEN_COLUMNS) + 1))})"
)
_IN_SPACE = "WHERE id = ? AND space = ?"
_SELECT_SEGMENTS = (
    "SELECT session_id, start_seq, end_seq, data FROM fold_segments WHERE session_id = ? AND end_seq <= ?"
)
# Only beside a session that exists: a writer that kept a session open must not leave rows after its erase.
_INSERT_SEGMENT = (
    "INSERT OR REPLACE INTO fold_segments (session_id, start_seq, end_seq, data)"
    " SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)"
)
_INSERT_HISTORY = "INSERT INTO event_history (space, id, time, kind, data) VALUES (?, ?, ?, ?, ?)"
_TAKEN = "SELECT 1 FROM sessions WHERE id = ? UNION ALL SELECT 1 FROM tombstones WHERE id = ?"


class SqliteStore(SqliteListing, BaseStore, SqliteBlobs):
    """The default store: a single SQLite file. Open it with `SqliteStore.open`."""

    def __init__(self, path: str, *, busy_timeout_ms: int = 5000, synchronous: Synchronous = "NORMAL") -> None:
        super().__init__()
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}")
        self.path = path
        self.synchronous: Synchronous = synchronous
        self._db = SqliteConnections(path, busy_timeout_ms=busy_timeout_ms, synchronous=synchronous)
        self._run = self._db.run
        self._run_short = self._db.run_short
        self._heads = KnownHeads()
        self.history_bounds = HistoryBounds()
        """What the event history keeps (`stellate.store.history`)."""

    @classmethod
    async def open(
        cls, url: str, *, migrate: bool = True, busy_timeout_ms: int = 5000, synchronous: Synchronous = "NORMAL"
    ) -> SqliteStore:
        """Open (and create) the file at ``url`` and bring its schema up to date.

        Args:
            url: ``sqlite:///path`` (or a bare path; ``:memory:`` for a throwaway store).
            migrate: Apply missing migrations; when False a file that is behind is refused.
            busy_timeout_ms: How long a write waits for another process's write lock.
            synchronous: ``NORMAL`` (default: a committed write survives a crash of the process, and the last
                commits may be lost on power loss) or ``FULL`` (it survives power loss too, for an fsync per
                commit). See docs/store.md.

        Raises:
            SchemaError: the file was written by a newer stellate.
            StoreError: the file cannot be opened, or ``migrate`` is False and the schema is behind.
        """
        path = sqlite_path(url)
        if path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        store = cls(path, busy_timeout_ms=busy_timeout_ms, synchronous=synchronous)
        try:
            if not store._open_current():
                await store._run(store._setup, migrate)
                store._db.open_loop_connection()
        except BaseException:
            await store.close()
            raise
        return store

    def _open_current(self) -> bool:
        """Open the loop's connection and tell whether the schema is current, without waiting for any lock.

        The common open (every CLI run, every worker) ends here: one connection, no thread started. A new or
        outdated file, or a lock held elsewhere, leaves the work to the store thread, which may wait.
        """
        try:
            conn = self._db.open_loop_connection()
            return conn is not None and self._read_version(conn) == len(MIGRATIONS)
        except ConflictError as exc:
            if exc.code != "store_locked":
                raise
            return False

    async def schema_version(self) -> int:
        """Version of the schema in the file (the number of migrations applied)."""
        return await self._run(self._read_version)

    # -- thread side -----------------------------------------------------------------------------

    @staticmethod
    def _read_version(db: sqlite3.Connection) -> int:
        try:
            db.execute("CREATE TABLE IF NOT EXISTS stellate_schema (version INTEGER NOT NULL)")
            row = db.execute("SELECT MAX(version) FROM stellate_schema").fetchone()
        except sqlite3.Error as exc:  # a new file another process is still creating holds its write lock
            raise translate(exc, "cannot read the schema version") from exc
        return int(row[0] or 0)

    def _setup(self, db: sqlite3.Connection, migrate: bool) -> None:
        if self._read_version(db) == len(MIGRATIONS):
            return  # the common case: opening costs no write lock (every CLI run and worker opens cold)
        with WriteTransaction(db):
            version = self._read_version(db)
            if version > len(MIGRATIONS):
                raise SchemaError(
                    f"{self.path} has schema {version}, newer than this stellate ({len(MIGRATIONS)}); upgrade stellate",
                    version=version,
                )
            if version < len(MIGRATIONS) and not migrate:
                raise StoreError(f"{self.path} needs migrating; run `stellate db migrate`", code="schema_behind")
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO stellate_schema (version) VALUES (?)", (number,))

    def _insert_sync(self, db: sqlite3.Connection, record: SessionRecord, planned: PlannedAppend | None) -> None:
        with WriteTransaction(db):
            if db.execute(_TAKEN, (record.id, record.id)).fetchone():
                raise ConflictError(f"a session {record.id!r} already exists", code="session_exists")
            check_lineage_exists(db, record, self.space)
            db.execute(_INSERT_RECORD, (*record_row(record), self.space))
            if planned is not None:
                db.executemany(INSERT_EVENTS, event_rows(record.id, planned))
                index_planned(db, record.id, planned)

    def _append_sync(
        self,
        db: sqlite3.Connection,
        session_id: SessionId,
        events: Sequence[NewEvent],
        expected: int | None,
        fence: Fence,
    ) -> list[Event]:
        with WriteTransaction(db):
            planned = append_in_transaction(db, self._heads, self.space, session_id, events, expected, fence)
        if fence.token is not None:
            self._heads.remember(self.space, planned.record)
        return planned.events

    def _append_batches_sync(
        self, db: sqlite3.Connection, batches: Mapping[SessionId, Sequence[NewEvent]], fence: Fence
    ) -> dict[SessionId, list[Event]]:
        with WriteTransaction(db):
            return {
                sid: append_in_transaction(db, self._heads, self.space, sid, events, None, fence).events
                for sid, events in batches.items()
            }

    def _take_lease_sync(
        self, db: sqlite3.Connection, session_id: SessionId, lease: Lease, now: int
    ) -> SessionRecord | None:
        params = (lease.owner, lease.token, lease.acquired_at, lease.expires_at, session_id, now, self.space)
        row = write_one(db, _LEASE["take"], params)
        if row is None:
            return None
        record = record_from_row(row)
        self._heads.remember(self.space, record)  # the holder's first write can skip reading the row
        return record

    @staticmethod
    def _update_sync(db: sqlite3.Connection, statement: str, params: Sequence[Any]) -> bool:
        return write_one(db, statement, params, changed=True) is not None

    @staticmethod
    def _select(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            return db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise translate(exc, "read failed") from exc

    @staticmethod
    def _write_segments_sync(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
        with WriteTransaction(db):
            db.executemany(_INSERT_SEGMENT, rows)

    def _append_history_sync(
        self, db: sqlite3.Connection, entries: Sequence[NewHistoryEntry], now: int
    ) -> list[HistoryEntry]:
        with WriteTransaction(db):
            last = int(db.execute(upsert_head_sql("?"), (self.space, len(entries))).fetchone()[0])
            first = last - len(entries) + 1
            added = [HistoryEntry(id=first + n, time=now, kind=e.kind, data=e.data) for n, e in enumerate(entries)]
            db.executemany(_INSERT_HISTORY, [(self.space, e.id, e.time, e.kind, e.data) for e in added])
            if prune_due(last, len(entries)):
                db.execute(prune_sql("?"), prune_params(self.space, last, now, self.history_bounds))
        return added

    def _read_history_sync(
        self,
        db: sqlite3.Connection,
        after: int | None,
        before: int | None,
        limit: int,
        kinds: Sequence[str] | None,
    ) -> HistoryPage:
        head = self._select(db, head_sql("?"), (self.space,))
        last_id = int(head[0][0]) if head else 0
        window = HistoryWindow.of(after, before, last_id, self.clock(), self.history_bounds)
        newest = after is None
        query = read_sql("?", kinds=len(kinds or ()), newest=newest)
        wanted = kinds is None or len(kinds) > 0  # ``IN ()`` is not portable SQL, and nothing could match
        rows = self._select(db, query, read_params(self.space, window, kinds, limit)) if wanted else []
        return HistoryPage(entries=entries_of(rows, newest=newest), last_id=last_id)

    # -- BaseStore primitives --------------------------------------------------------------------

    async def _insert_session(self, record: SessionRecord, planned: PlannedAppend | None) -> None:
        if planned is not None and len(planned.events) > _SHORT_BATCH:
            await self._run(self._insert_sync, record, planned)
        else:
            await self._run_short(self._insert_sync, record, planned)

    async def _append_planned(
        self, session_id: SessionId, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> list[Event]:
        run = self._run if len(events) > _SHORT_BATCH else self._run_short
        return await run(self._append_sync, session_id, events, expected_seq, fence)

    async def _append_batches(
        self, batches: Mapping[SessionId, Sequence[NewEvent]], fence: Fence
    ) -> dict[SessionId, list[Event]]:
        return await self._run(self._append_batches_sync, batches, fence)

    async def _take_lease(self, session_id: SessionId, lease: Lease, now: int) -> SessionRecord | None:
        return await self._run_short(self._take_lease_sync, session_id, lease, now)

    async def _renew_lease(self, session_id: SessionId, token: str, expires_at: int) -> bool:
        return await self._run_short(self._update_sync, _LEASE["renew"], (expires_at, session_id, token))

    async def _try_claim(self, claim: Claim, now: int) -> bool:
        params = (claim.key, claim.owner, claim.token, claim.expires_at, now)
        return await self._run_short(self._update_sync, _CLAIM["take"], params)

    async def _release_claim(self, key: str, token: str) -> None:
        await self._run_short(self._update_sync, _CLAIM["release"], (key, token))

    async def _release_lease(self, session_id: SessionId, token: str) -> None:
        await self._run_short(self._update_sync, _LEASE["release"], (session_id, token))

    async def _read_own(
        self,
        session_id: SessionId,
        start: int,
        stop: int,
        types: Sequence[str] | None,
        reverse: bool,
        limit: int | None,
    ) -> list[Event]:
        sql = select_events_sql(placeholder="?", types=types, reverse=reverse, limit=limit)
        params = (session_id, start, stop, *(types or ()))
        short = stop - start <= _SHORT_READ or (limit is not None and limit <= _SHORT_BATCH)
        rows = await (
            self._run_short(self._select, sql, params, writes=False) if short else self._run(self._select, sql, params)
        )
        return [event_from_row(r) for r in rows]

    async def _get_record(self, session_id: SessionId) -> SessionRecord | None:
        sql, params = f"{_SELECT_RECORD} {_IN_SPACE}", (session_id, self.space)
        rows = await self._run_short(self._select, sql, params, writes=False)
        return record_from_row(rows[0]) if rows else None

    async def list_sessions(self, *, parent_id: SessionId | None = None, roots: bool = False) -> list[SessionRecord]:
        """All sessions in creation order, or the children of ``parent_id``, or the roots."""
        sql, params = select_sessions_sql(placeholder="?", parent_id=parent_id, roots=roots, space=self.space)
        return [record_from_row(r) for r in await self._run(self._select, sql, params)]

    async def list_digests(self) -> list[SessionDigest]:
        """Every session's digest, in creation order (only the digest's columns are read)."""
        return [
            digest_from_row(r)
            for r in await self._run(self._select, select_digests_sql(placeholder="?"), (self.space,))
        ]

    async def _read_segment_rows(self, session_id: SessionId, max_end: int | None) -> list[StoredSegment]:
        params = (session_id, _MAX_SEQ if max_end is None else max_end)
        if max_end is not None and max_end <= _SHORT_SEGMENT_SPAN:
            rows = await self._run_short(self._select, _SELECT_SEGMENTS, params, writes=False)
        else:
            rows = await self._run(self._select, _SELECT_SEGMENTS, params)
        return [StoredSegment(session_id=SessionId(r[0]), start=r[1], end=r[2], data=r[3]) for r in rows]

    async def _write_segment_rows(self, segments: Sequence[StoredSegment]) -> None:
        rows = [(s.session_id, s.start, s.end, s.data) for s in segments]
        await self._run(self._write_segments_sync, rows)

    async def append_history(self, entries: Sequence[NewHistoryEntry]) -> list[HistoryEntry]:
        """Append rows to this space's event history (see `stellate.store.history.EventHistory`)."""
        if not entries:
            return []
        added = await self._run_short(self._append_history_sync, list(entries), self.clock())
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
        return await self._run_short(self._read_history_sync, after, before, limit, kinds, writes=False)

    async def _erase(
        self, targets: tuple[SessionId, ...], dependents: Dependents | None, by: str, now: int, dry_run: bool
    ) -> ErasePlan:
        return await self._run(
            lambda db: erase_sync(
                db, space=self.space, targets=targets, dependents=dependents, by=by, now=now, dry_run=dry_run
            )
        )

    async def list_tombstones(self) -> list[Tombstone]:
        """The space's tombstones, oldest erase first."""
        rows = await self._run(self._select, select_tombstones_sql("?"), (self.space,))
        return [tombstone_from_row(r) for r in rows]

    async def search_messages(self, query: SearchQuery) -> SearchPage:
        """Search this space's message text (see `stellate.store.search`, `stellate.store.sqlite_search`)."""
        return await self._run(search_sync, self.space, query)

    async def close(self) -> None:
        """Close the connections and stop the thread; safe to call twice."""
        await self._db.close()
