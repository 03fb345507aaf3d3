"""PostgreSQL store: the shared source of truth when several processes serve the same sessions.

One writer per session, across processes: an append first takes the session's row lock (``SELECT ... FOR
UPDATE``), so appenders to one session queue up and each plans its batch against the committed head, while
appenders to different sessions never wait for each other; the ``(session_id, seq)`` primary key catches a
write that slipped past the lock (`ConflictError`). How appends are written is `stellate.store.pg_append`.
JSON columns are ``TEXT`` (not ``jsonb``) so event data comes back byte for byte as it was validated,
exactly as in SQLite; both backends share their row mapping (`stellate.store._sql`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

try:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - only without the extra, which the test environment has
    raise ImportError(
        'the PostgreSQL store needs psycopg 3; install it with `pip install "stellate[postgres]"`'
    ) from exc

from stellate.errors import (
    ConflictError,
    NotFoundError,
    SchemaError,
    StoreError,
)
from stellate.log.events import Event, NewEvent
from stellate.store._batch import Fence, KnownHeads, PlannedAppend, interleaved_range, plan_append
from stellate.store._erase_sql import select_tombstones_sql, tombstone_from_row
from stellate.store._sql import (
    SELECTED_COLUMNS,
    WRITTEN_COLUMNS,
    claim_sql,
    digest_from_row,
    event_from_row,
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
    HISTORY_CHANNEL,
    HistoryBounds,
    HistoryEntry,
    HistoryPage,
    NewHistoryEntry,
    signal_locally,
)
from stellate.store.pg_append import (
    APPEND,
    INSERT_EVENTS,
    append_at_head_params,
    append_at_head_sql,
    append_params,
    event_columns,
)
from stellate.store.pg_blobs import PostgresBlobs
from stellate.store.pg_erase import erase, lock_lineage
from stellate.store.pg_errors import describe_url as _describe
from stellate.store.pg_errors import translate_error as _translate
from stellate.store.pg_history import append_history, read_history
from stellate.store.pg_listing import PostgresListing
from stellate.store.pg_presence import GONE_SQL, Presence, presence_key
from stellate.store.pg_schema import MIGRATIONS
from stellate.store.pg_search import search_messages_sql, search_page
from stellate.store.pg_signals import PostgresSignals
from stellate.store.search import SearchPage, SearchQuery
from stellate.store.segments import StoredSegment
from stellate.store.signals import LOG_CHANNEL
from stellate.store.types import Claim, Lease, SessionId, SessionRecord

__all__ = ["MIGRATIONS", "PostgresStore"]

Connection = psycopg.AsyncConnection[TupleRow]

_SELECT_RECORD = f"SELECT {', '.join(SELECTED_COLUMNS)} FROM sessions"
_LEASE = lease_sql("%s")
_CLAIM = claim_sql("%s")
_IN_SPACE = "WHERE id = %s AND space = %s"
_LOCK_RECORD = f"{_SELECT_RECORD} {_IN_SPACE} FOR UPDATE"
_SELECT_TYPES = "SELECT type FROM events WHERE session_id = %s AND seq >= %s AND seq < %s ORDER BY seq"
# ON CONFLICT keeps a racing duplicate from aborting the transaction; no row back means the id is taken.
_INSERT_RECORD = (
    f"INSERT INTO sessions ({', '.join(WRITTEN_COLUMNS)}, space)"
    f" VALUES ({', '.join(['%s'] * (len(WRITTEN_COLUMNS) + 1))})"
    " ON CONFLICT (id) DO NOTHING"
)
_ERASED = "SELECT 1 FROM tombstones WHERE id = %s"
_APPEND_AT_HEAD = {release: append_at_head_sql(release=release) for release in (False, True)}
_SELECT_SEGMENTS = (
    "SELECT session_id, start_seq, end_seq, data FROM fold_segments WHERE session_id = %s AND end_seq <= %s"
)
_INSERT_SEGMENTS = (
    "INSERT INTO fold_segments (session_id, start_seq, end_seq, data)"
    " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::text[]) AS s(id, start_seq, end_seq, data)"
    # Only beside a session that exists (locked against a concurrent erase), so none outlives its session.
    " WHERE EXISTS (SELECT 1 FROM sessions WHERE sessions.id = s.id FOR SHARE)"
    " ON CONFLICT (session_id, start_seq, end_seq) DO UPDATE SET data = EXCLUDED.data"
)
# One statement, one round trip: its notifications go out, in array order, when it commits.
_NOTIFY = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) WITH ORDINALITY AS sent(payload, n) ORDER BY n"
_IDLE_CHECK_SECONDS = 2.0  # a connection idle longer than this is pinged before use
_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS stellate_schema (version INTEGER NOT NULL)"


class PostgresStore(PostgresListing, BaseStore, PostgresBlobs):
    """Sessions in PostgreSQL, shared by any number of processes. Open it with `PostgresStore.open`."""

    def __init__(
        self, url: str, *, schema: str | None = None, min_size: int = 1, max_size: int = 10, timeout: float = 10.0
    ) -> None:
        super().__init__()
        self._heads = KnownHeads()
        self.url = url
        self.schema = schema
        self._min_size, self._max_size, self._timeout = min_size, max_size, timeout
        self._where = _describe(url) + (f" (schema {schema})" if schema else "")
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._returned: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self.application_name = "stellate"
        """Names the pool's connections in ``pg_stat_activity`` (``stellate <schema>`` once open)."""
        self._presence = Presence(url)
        self.signals: PostgresSignals = PostgresSignals(url, schema, self)
        """Signals to and from every process on this database and schema, over ``LISTEN``/``NOTIFY``."""
        self.history_bounds = HistoryBounds()
        """What the event history keeps (`stellate.store.history`)."""

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
    ) -> PostgresStore:
        """Connect to ``url`` (``postgresql://user:password@host:port/db``) and bring the schema up to date.

        Args:
            url: A libpq connection URL.
            migrate: Apply missing migrations; when False a database that is behind is refused.
            schema: Keep the tables in this PostgreSQL schema (created if missing) instead of the default
                ``search_path``: for tests, or several stellate deployments in one database.
            min_size: Connections the pool keeps open.
            max_size: Connections the pool opens at most.
            timeout: Seconds to wait for a connection, at open and when every pooled one is busy.

        Raises:
            SchemaError: the database was written by a newer stellate.
            StoreError: the server cannot be reached, or ``migrate`` is False and the schema is behind.
        """
        store = cls(url, schema=schema, min_size=min_size, max_size=max_size, timeout=timeout)
        try:
            await store._connect(migrate)
        except BaseException:
            await store.close()
            raise
        return store

    async def schema_version(self) -> int:
        """Version of the schema in the database (the number of migrations applied)."""
        async with self._connection("reading the schema version") as conn:
            return await _read_version(conn)

    # -- connections -----------------------------------------------------------------------------

    async def _connect(self, migrate: bool) -> None:
        # Migrate over a direct connection: its errors say what is wrong (refused, no such database),
        # where a pool would only time out while retrying in the background.
        try:
            async with await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=max(2, round(self._timeout))
            ) as conn:
                await self._setup(conn, migrate)
        except psycopg.Error as exc:
            raise _translate(exc, "cannot open the PostgreSQL store", self._where) from exc
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self.url,
            kwargs={"autocommit": True, "application_name": self.application_name},
            min_size=self._min_size,
            max_size=self._max_size,
            timeout=self._timeout,
            configure=self._configure if self.schema else None,
            check=self._check_if_idle,
            reset=self._note_return,
            name="stellate",
            open=False,
        )
        self._pool = pool
        try:
            await pool.open(wait=True, timeout=self._timeout)
        except psycopg.Error as exc:
            raise _translate(exc, "cannot open the connection pool", self._where) from exc

    async def _note_return(self, conn: Connection) -> None:
        self._returned[conn] = time.monotonic()

    async def _check_if_idle(self, conn: Connection) -> None:
        """Ping a connection that sat idle a while before handing it out.

        After a server restart the pool then replaces its dead connections instead of failing the next requests;
        a connection in steady use is not pinged, so the hot path pays nothing.
        """
        if time.monotonic() - self._returned.get(conn, 0.0) > _IDLE_CHECK_SECONDS:
            await conn.execute("SELECT 1")

    async def _configure(self, conn: Connection) -> None:
        if self.schema:
            await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))

    async def _setup(self, conn: Connection, migrate: bool) -> None:
        await self._configure(conn)
        async with conn.transaction():
            # Serializes concurrent opens (several processes starting at once) until this one commits.
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"stellate.migrate:{self.schema or ''}",))
            if self.schema:
                await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            await conn.execute(_VERSION_TABLE)
            version = await _read_version(conn)
            self._check_version(version, migrate)
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                await conn.execute(script)
                await conn.execute("INSERT INTO stellate_schema (version) VALUES (%s)", (number,))
            # The schema the tables really live in (``schema``, or the URL's search_path): signals are scoped to it.
            found = await (await conn.execute("SELECT current_schema()")).fetchone()
            where = str(found[0]) if found and found[0] else self.schema
            self.signals.scope(where)
            named = conninfo_to_dict(self.url).get("application_name")  # the URL's own name wins
            self.application_name = str(named) if named else f"stellate {where or 'public'}"[:63]

    def _check_version(self, version: int, migrate: bool) -> None:
        known = len(MIGRATIONS)
        if version > known:
            raise SchemaError(
                f"{self._where} has schema {version}, newer than this stellate's {known}; upgrade stellate",
                version=version,
            )
        if version < known and not migrate:
            raise StoreError(f"{self._where} needs migrating; run `stellate db migrate`", code="schema_behind")

    @asynccontextmanager
    async def _connection(self, what: str, **details: Any) -> AsyncIterator[Connection]:
        """A pooled connection (autocommit), with psycopg errors translated on the way out."""
        if self._pool is None:
            raise StoreError("the store is closed; open it with `await PostgresStore.open(url)`", code="store_closed")
        try:
            async with self._pool.connection() as conn:
                yield conn
        except (psycopg.Error, UnicodeEncodeError) as exc:
            raise _translate(exc, what, self._where, **details) from exc

    @asynccontextmanager
    async def _transaction(self, what: str, **details: Any) -> AsyncIterator[Connection]:
        async with self._connection(what, **details) as conn, conn.transaction():
            yield conn

    # -- BaseStore primitives --------------------------------------------------------------------

    async def _insert_session(self, record: SessionRecord, planned: PlannedAppend | None) -> None:
        async with self._transaction("cannot create the session", session_id=record.id) as conn:
            await lock_lineage(conn, record, self.space)
            erased = await (await conn.execute(_ERASED, (record.id,))).fetchone()
            inserted = None if erased else await conn.execute(_INSERT_RECORD, (*record_row(record), self.space))
            if inserted is None or inserted.rowcount == 0:
                raise ConflictError(
                    f"a session {record.id!r} already exists", code="session_exists", session_id=record.id
                )
            if planned is not None:
                await conn.execute(INSERT_EVENTS, event_columns(record.id, planned))

    async def _append_planned(
        self, session_id: SessionId, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> list[Event]:
        written = await self._append_at_known_head(session_id, events, expected_seq, fence)
        if written is not None:
            return written
        async with self._transaction("cannot append", session_id=session_id) as conn:
            row = await (await conn.execute(_LOCK_RECORD, (session_id, self.space))).fetchone()
            if row is None:
                raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
            record = record_from_row(row)
            gap = interleaved_range(record, expected_seq, fence)
            types = None
            if gap is not None:
                found = await (await conn.execute(_SELECT_TYPES, (session_id, *gap))).fetchall()
                types = [str(t) for (t,) in found]
            planned = plan_append(record, events, expected_seq, fence, interleaved=types)
            await conn.execute(APPEND, append_params(session_id, planned, self.signals.name(LOG_CHANNEL)))
            if fence.release:
                await conn.execute(_LEASE["release"], (session_id, fence.token))
        if fence.token is not None:
            self._heads.remember(self.space, planned.record)
        return planned.events

    async def _append_at_known_head(
        self, session_id: SessionId, events: Sequence[NewEvent], expected_seq: int | None, fence: Fence
    ) -> list[Event] | None:
        """One statement when this lease holder's last write left the head it still is; None when it is not."""
        known = self._heads.plan(self.space, session_id, events, expected_seq, fence)
        if known is None or fence.token is None:
            return None
        planned, head = known
        channel = self.signals.name(LOG_CHANNEL)
        params = append_at_head_params(session_id, self.space, planned, head, fence.token, channel)
        async with self._connection("cannot append", session_id=session_id) as conn:
            row = await (await conn.execute(_APPEND_AT_HEAD[fence.release], params)).fetchone()
        if row is None:
            return None
        self._heads.remember(self.space, planned.record)
        return planned.events

    async def _append_batches(
        self, batches: Mapping[SessionId, Sequence[NewEvent]], fence: Fence
    ) -> dict[SessionId, list[Event]]:
        out: dict[SessionId, list[Event]] = {}
        channel = self.signals.name(LOG_CHANNEL)
        async with self._transaction("cannot append to several sessions") as conn:
            for session_id in sorted(batches):  # one lock order for every writer: no deadlocks between them
                row = await (await conn.execute(_LOCK_RECORD, (session_id, self.space))).fetchone()
                if row is None:
                    raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
                planned = plan_append(record_from_row(row), batches[session_id], None, fence)
                await conn.execute(APPEND, append_params(session_id, planned, channel))
                out[session_id] = planned.events
        return {sid: out[sid] for sid in batches}

    async def notify(self, channel: str, payloads: list[str]) -> None:
        """``NOTIFY channel`` with each payload, in order, in one statement (see `PostgresSignals`)."""
        async with self._connection("cannot send signals") as conn:
            await conn.execute(_NOTIFY, (channel, payloads))

    async def _take_lease(self, session_id: SessionId, lease: Lease, now: int) -> SessionRecord | None:
        params = (lease.owner, lease.token, lease.acquired_at, lease.expires_at, session_id, now, self.space)
        async with self._connection("cannot take the lease", session_id=session_id) as conn:
            row = await (await conn.execute(_LEASE["take"], params)).fetchone()
        if row is None:
            return None
        record = record_from_row(row)
        self._heads.remember(self.space, record)  # the holder's first write can skip reading the row
        return record

    async def _new_lease_token(self) -> str:
        token = await super()._new_lease_token()
        random, dot, stamp = token.partition(".")
        return f"{random}{await self._presence.tag()}{dot}{stamp}"

    async def _holder_is_gone(self, lease: Lease) -> bool:
        """Gone when its process on this host ended, or when its database session (on any host) is gone."""
        if await super()._holder_is_gone(lease):
            return True
        key = presence_key(lease.token)
        if key is None or key == self._presence.key:
            return False
        async with self._connection("cannot check the lease holder") as conn:
            row = await (await conn.execute(GONE_SQL, (key, key))).fetchone()
        return bool(row and row[0])

    async def _renew_lease(self, session_id: SessionId, token: str, expires_at: int) -> bool:
        async with self._connection("cannot renew the lease", session_id=session_id) as conn:
            return (await conn.execute(_LEASE["renew"], (expires_at, session_id, token))).rowcount > 0

    async def _try_claim(self, claim: Claim, now: int) -> bool:
        params = (claim.key, claim.owner, claim.token, claim.expires_at, now)
        async with self._connection("cannot claim background work") as conn:
            return (await conn.execute(_CLAIM["take"], params)).rowcount > 0

    async def _release_claim(self, key: str, token: str) -> None:
        async with self._connection("cannot release a claim") as conn:
            await conn.execute(_CLAIM["release"], (key, token))

    async def _release_lease(self, session_id: SessionId, token: str) -> None:
        async with self._connection("cannot release the lease", session_id=session_id) as conn:
            await conn.execute(_LEASE["release"], (session_id, token))

    async def _read_own(
        self,
        session_id: SessionId,
        start: int,
        stop: int,
        types: Sequence[str] | None,
        reverse: bool,
        limit: int | None,
    ) -> list[Event]:
        if types is not None and not types:
            return []  # PostgreSQL refuses the empty ``IN ()`` SQLite accepts; nothing can match anyway
        query = select_events_sql(placeholder="%s", types=types, reverse=reverse, limit=limit)
        rows = await self._select(query, (session_id, start, stop, *(types or ())))
        return [event_from_row(r) for r in rows]

    async def _get_record(self, session_id: SessionId) -> SessionRecord | None:
        rows = await self._select(f"{_SELECT_RECORD} {_IN_SPACE}", (session_id, self.space))
        return record_from_row(rows[0]) if rows else None

    async def list_sessions(self, *, parent_id: SessionId | None = None, roots: bool = False) -> list[SessionRecord]:
        """All sessions in creation order, or the children of ``parent_id``, or the roots."""
        sql, params = select_sessions_sql(placeholder="%s", parent_id=parent_id, roots=roots, space=self.space)
        return [record_from_row(r) for r in await self._select(sql, params)]

    async def list_digests(self) -> list[SessionDigest]:
        """Every session's digest, in creation order (only the digest's columns are read)."""
        return [digest_from_row(r) for r in await self._select(select_digests_sql(placeholder="%s"), (self.space,))]

    async def _read_segment_rows(self, session_id: SessionId, max_end: int | None) -> list[StoredSegment]:
        rows = await self._select(_SELECT_SEGMENTS, (session_id, (1 << 62) if max_end is None else max_end))
        return [StoredSegment(session_id=SessionId(r[0]), start=r[1], end=r[2], data=r[3]) for r in rows]

    async def _write_segment_rows(self, segments: Sequence[StoredSegment]) -> None:
        columns = ([s.session_id for s in segments], [s.start for s in segments], [s.end for s in segments])
        async with self._connection("cannot store fold segments") as conn:
            await conn.execute(_INSERT_SEGMENTS, (*columns, [s.data for s in segments]))

    async def append_history(self, entries: Sequence[NewHistoryEntry]) -> list[HistoryEntry]:
        """Append rows to this space's event history (see `stellate.store.history.EventHistory`)."""
        if not entries:
            return []
        channel, now = self.signals.name(HISTORY_CHANNEL), self.clock()
        async with self._connection("cannot append to the event history") as conn:
            added = await append_history(
                conn, space=self.space, entries=entries, now=now, bounds=self.history_bounds, channel=channel
            )
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
        async with self._connection("cannot read the event history") as conn:
            return await read_history(
                conn,
                space=self.space,
                after=after,
                before=before,
                limit=limit,
                kinds=kinds,
                now=self.clock(),
                bounds=self.history_bounds,
            )

    async def _erase(
        self, targets: tuple[SessionId, ...], dependents: Dependents | None, by: str, now: int, dry_run: bool
    ) -> ErasePlan:
        async with self._transaction("cannot erase", session_id=targets[0]) as conn:
            return await erase(
                conn, space=self.space, targets=targets, dependents=dependents, by=by, now=now, dry_run=dry_run
            )

    async def list_tombstones(self) -> list[Tombstone]:
        """The space's tombstones, oldest erase first."""
        return [tombstone_from_row(r) for r in await self._select(select_tombstones_sql("%s"), (self.space,))]

    async def search_messages(self, query: SearchQuery) -> SearchPage:
        """Search this space's message text (see `stellate.store.search`, `stellate.store.pg_search`)."""
        sql, params = search_messages_sql(query, self.space)
        async with self._connection("search failed") as conn:
            rows = await (await conn.execute(sql, params)).fetchall()
        return search_page(rows, query)

    async def _select(self, query: str, params: Sequence[Any]) -> list[TupleRow]:
        async with self._connection("read failed") as conn:
            return await (await conn.execute(query, params)).fetchall()

    async def close(self) -> None:
        """Stop the signal listener and close every pooled connection; safe to call twice."""
        await self.signals.close()
        await self._presence.close()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


async def _read_version(conn: Connection) -> int:
    row = await (await conn.execute("SELECT MAX(version) FROM stellate_schema")).fetchone()
    return int(row[0] or 0) if row else 0
