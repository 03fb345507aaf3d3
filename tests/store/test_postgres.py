"""PostgreSQL-specific rules: O(1) forks, migrations, concurrent opens and error translation.

The shared contract runs on PostgreSQL through ``conftest.BACKENDS``; these tests cover what only this
backend has.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

from psycopg import errors as pg_errors  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg_pool import AsyncConnectionPool, PoolTimeout  # noqa: E402

from stellate.errors import (  # noqa: E402
    ConflictError,
    FormatError,
    NotFoundError,
    SchemaError,
    SessionBusyError,
    StoreError,
    UsageError,
)
from stellate.log import NewEvent, make_event, validate_event  # noqa: E402
from stellate.store import Anchor, CompletedTurn, ForkRequest, SessionId, SessionRecord, open_store  # noqa: E402
from stellate.store.postgres import MIGRATIONS, PostgresStore, _translate  # noqa: E402
from stellate.testing.store_contract import open_tool_turn, turn  # noqa: E402

pytestmark = pytest.mark.postgres
S = SessionId


@pytest.fixture
async def pg(pg_url: str, pg_schema: str) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(pg_url, schema=pg_schema)
    yield store
    await store.close()


@pytest.fixture
def admin(pg_url: str, pg_schema: str) -> Iterator[Any]:
    """A plain connection into the test's schema, for looking behind the store's back."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        yield conn


def _scalar(admin: Any, query: str, *params: Any) -> Any:
    return admin.execute(query, params).fetchone()[0]


async def _source(store: PostgresStore, sid: str, turns: int) -> None:
    events = [make_event("session/created", {"label": sid})]
    events += [e for n in range(1, turns + 1) for e in turn(n)]
    await store.create_session(session_id=S(sid), events=events)


class _QueryLog:
    """The row count of every statement the store runs (rows returned or written), the pool's own aside.

    A pooled connection idle for a while is pinged (``SELECT 1``) before use, and one the pool opens in the
    background gets its ``search_path`` set: both depend on timing, not on the work measured.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rowcounts: list[int] = []
        original = psycopg.AsyncCursor.execute

        async def execute(cursor: Any, *args: Any, **kwargs: Any) -> Any:
            result = await original(cursor, *args, **kwargs)
            if args[:1] != ("SELECT 1",) and not isinstance(args[0], sql.Composed):
                self.rowcounts.append(max(cursor.rowcount, 0))
            return result

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)

    def take(self) -> tuple[int, int]:
        """Statements and rows since the last call."""
        queries, rows = len(self.rowcounts), sum(self.rowcounts)
        self.rowcounts.clear()
        return queries, rows


# -- fork by reference ---------------------------------------------------------------------------


async def test_fork_stores_no_events_for_the_child(pg: PostgresStore, admin: Any) -> None:
    """Forking a 1,000-event source adds one sessions row and no events rows."""
    await _source(pg, "src", 166)
    await pg.append(S("src"), [make_event("memory/put", {"content": "m"})] * 3)
    assert _scalar(admin, "SELECT count(*) FROM events") == 1000
    child = await pg.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Anchor()))
    assert child.inherited == 997
    assert _scalar(admin, "SELECT count(*) FROM events") == 1000
    assert _scalar(admin, "SELECT count(*) FROM events WHERE session_id = 'kid'") == 0
    assert len(await pg.read_events(S("kid"))) == 997


async def test_fork_cost_does_not_grow_with_the_source(pg: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork of a 1,000-event source runs the same queries over the same number of rows as one of 13."""
    await _source(pg, "short", 2)
    await _source(pg, "long", 166)
    log = _QueryLog(monkeypatch)
    costs = []
    for source in ("short", "long"):
        await pg.create_session(session_id=S(f"kid-{source}"), fork=ForkRequest(source_id=S(source), point=Anchor()))
        costs.append(log.take())
    assert costs[0] == costs[1]
    assert costs[0][0] <= 8


async def test_a_lease_holder_writes_at_its_own_head_in_one_statement(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After taking the lease (or its own last write), a holder's append skips the row lock and read."""
    await _source(pg, "a", 1)
    lease, _ = await pg.acquire_lease(S("a"), owner="holder", ttl=30)
    log = _QueryLog(monkeypatch)
    await pg.append(S("a"), turn(2)[:2], lease=lease)
    await pg.append(S("a"), turn(2)[2:], lease=lease, release_lease=True)
    assert log.take()[0] == 2  # one statement each
    await pg.append(S("a"), [make_event("memory/put", {"content": "m"})])  # no lease: lock, read, write
    assert log.take()[0] == 2
    record = await pg.get_session(S("a"))
    assert (record.next_seq, record.lease, record.turn_count) == (14, None, 2)


# -- migrations ----------------------------------------------------------------------------------


async def test_reopening_does_not_migrate_again(pg_url: str, pg_schema: str, admin: Any) -> None:
    """Opening an up-to-date database applies nothing and keeps its data."""
    first = await PostgresStore.open(pg_url, schema=pg_schema)
    await first.create_session(session_id=S("a"))
    await first.close()
    second = await PostgresStore.open(pg_url, schema=pg_schema)
    try:
        assert await second.schema_version() == len(MIGRATIONS)
        assert (await second.get_session(S("a"))).id == "a"
    finally:
        await second.close()
    assert _scalar(admin, "SELECT count(*) FROM stellate_schema") == len(MIGRATIONS)


async def test_concurrent_opens_migrate_once(pg_url: str, pg_schema: str, admin: Any) -> None:
    """Several opens racing on a fresh schema all succeed, and each migration is applied once."""
    stores = await asyncio.gather(*(PostgresStore.open(pg_url, schema=pg_schema) for _ in range(6)))
    try:
        assert [await s.schema_version() for s in stores] == [len(MIGRATIONS)] * 6
    finally:
        await asyncio.gather(*(s.close() for s in stores))
    versions = admin.execute("SELECT version FROM stellate_schema ORDER BY version").fetchall()
    assert [v for (v,) in versions] == list(range(1, len(MIGRATIONS) + 1))


async def test_newer_schema_is_refused(pg_url: str, pg_schema: str, pg: PostgresStore, admin: Any) -> None:
    """A database migrated by a newer stellate raises SchemaError(schema_too_new)."""
    admin.execute("INSERT INTO stellate_schema (version) VALUES (%s)", (len(MIGRATIONS) + 1,))
    with pytest.raises(SchemaError) as info:
        await PostgresStore.open(pg_url, schema=pg_schema)
    assert info.value.code == "schema_too_new"


async def test_behind_schema_without_migrate_is_refused_untouched(pg_url: str, pg_schema: str, admin: Any) -> None:
    """``migrate=False`` on a database that is behind raises schema_behind and creates nothing."""
    with pytest.raises(StoreError) as info:
        await PostgresStore.open(pg_url, schema=pg_schema, migrate=False)
    assert info.value.code == "schema_behind"
    assert _scalar(admin, "SELECT count(*) FROM pg_namespace WHERE nspname = %s", pg_schema) == 0


async def test_open_store_resolves_postgresql_urls(pg_url: str, pg_schema: str, admin: Any) -> None:
    """``open_store("postgresql://...")`` opens a PostgresStore (here in a schema chosen by the URL)."""
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
    store = await open_store(f"{pg_url}?options=-csearch_path%3D{pg_schema}")
    try:
        assert isinstance(store, PostgresStore)
        await store.create_session(session_id=S("a"))
    finally:
        await store.close()
    assert _scalar(admin, "SELECT count(*) FROM sessions") == 1


BEFORE_TURN_OPEN = 6
"""The last schema without ``sessions.turn_open`` (migrations are append-only, so this never changes)."""


async def _write_forest(pg_url: str, schema: str) -> None:
    """Sessions with and without an open turn, and a fork of one that has one, written by the current store."""
    store = await PostgresStore.open(pg_url, schema=schema)
    try:
        await store.create_session(session_id=S("closed"), events=turn(1))
        await store.create_session(session_id=S("open"), events=turn(1))
        await store.append(S("open"), open_tool_turn(2))
        await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("open"), point=CompletedTurn()))
        await store.create_session(session_id=S("half"), events=turn(1)[:2])
    finally:
        await store.close()


def _schema_at(admin: Any, schema: str, version: int, source: str) -> None:
    """Migrate ``schema`` (admin's search_path) to ``version`` only, then copy ``source``'s rows into its columns."""
    admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    admin.execute("CREATE TABLE stellate_schema (version INTEGER NOT NULL)")
    for number, script in enumerate(MIGRATIONS[:version], start=1):
        admin.execute(script)
        admin.execute("INSERT INTO stellate_schema (version) VALUES (%s)", (number,))
    for table, order in (("sessions", " ORDER BY position"), ("events", "")):
        found = admin.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = %s AND column_name <> 'position' ORDER BY ordinal_position",
            (table,),
        )
        columns = sql.SQL(", ").join(sql.Identifier(name) for (name,) in found.fetchall())
        copy = sql.SQL("INSERT INTO {table} ({columns}) SELECT {columns} FROM {source}.{table}" + order)
        admin.execute(copy.format(table=sql.Identifier(table), columns=columns, source=sql.Identifier(source)))


async def test_a_schema_from_before_turn_open_lists_its_open_turns_after_migrating(
    pg_url: str, pg_schema: str, admin: Any
) -> None:
    """Opening a database at the schema before ``turn_open`` fills the column from each cursor; appends keep it."""
    source = f"{pg_schema}_source"
    try:
        await _write_forest(pg_url, source)
        _schema_at(admin, pg_schema, BEFORE_TURN_OPEN, source)
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(source)))
    store = await PostgresStore.open(pg_url, schema=pg_schema)
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        flags = {d.id: d.turn_open for d in await store.list_digests()}
        assert flags == {"closed": False, "open": True, "kid": False, "half": True}
        await store.repair(S("open"))
        await store.append(S("half"), turn(1)[2:])
        assert not any(d.turn_open for d in await store.list_digests())
    finally:
        await store.close()


# -- storage -------------------------------------------------------------------------------------


async def test_event_data_is_stored_as_the_validated_text(pg: PostgresStore, admin: Any) -> None:
    """The ``data`` column holds the exact JSON text validation produced, array-literal syntax included."""
    data = {"content": 'NULL "q" {a,b} \\ \u00e9 \U0001f31f', "n": [2**63, 0.1], "e": {}}
    event = NewEvent(type="app/raw", data=data, ignorable=True)
    await pg.create_session(session_id=S("a"), events=[event])
    await pg.append(S("a"), [event, event])
    stored = [t for (t,) in admin.execute("SELECT data FROM events ORDER BY seq").fetchall()]
    assert stored == [validate_event(event)] * 3
    assert [e.data for e in await pg.read_events(S("a"))] == [data] * 3


async def test_empty_type_filter_reads_nothing(pg: PostgresStore) -> None:
    """``types=[]`` matches no event (PostgreSQL has no empty ``IN ()``)."""
    await _source(pg, "a", 1)
    assert await pg.read_events(S("a"), types=[]) == []


async def test_text_postgresql_cannot_hold_is_a_format_error(pg: PostgresStore) -> None:
    """A NUL or a lone surrogate in a slot is refused with FormatError and creates nothing."""
    for label in ["a\x00b", "a\ud800b"]:
        with pytest.raises(FormatError):
            await pg.create_session(session_id=S("a"), events=[make_event("session/created", {"label": label})])
    with pytest.raises(NotFoundError):
        await pg.get_session(S("a"))


# -- concurrency and error translation -----------------------------------------------------------


async def test_duplicate_insert_is_refused_atomically(pg: PostgresStore) -> None:
    """An insert racing past the existence check raises ConflictError(session_exists), keeping the first."""
    await pg.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "one"})])
    with pytest.raises(ConflictError) as info:
        await pg._insert_session(SessionRecord(id=S("a")), None)
    assert info.value.code == "session_exists"
    assert (await pg.get_session(S("a"))).label == "one"


async def test_seq_taken_behind_the_lock_is_a_conflict(pg: PostgresStore, admin: Any) -> None:
    """A seq already present (a writer that skipped the lock) fails the append whole with seq_conflict."""
    await _source(pg, "a", 1)
    admin.execute("INSERT INTO events VALUES ('a', 8, 'memory/put', 0, '{}', false)")
    with pytest.raises(ConflictError) as info:
        await pg.append(S("a"), turn(2))
    assert info.value.code == "seq_conflict"
    assert (await pg.get_session(S("a"))).next_seq == 7
    assert _scalar(admin, "SELECT count(*) FROM events") == 8


async def test_concurrent_creates_of_one_id_make_one_session(pg: PostgresStore) -> None:
    """Of several creates racing on one id exactly one wins; the others get session_exists."""
    results = await asyncio.gather(*(pg.create_session(session_id=S("a")) for _ in range(5)), return_exceptions=True)
    assert sum(isinstance(r, SessionRecord) for r in results) == 1
    assert all(r.code == "session_exists" for r in results if isinstance(r, ConflictError))
    assert len(await pg.list_sessions()) == 1


async def test_unreachable_server_is_a_store_error_saying_what_to_check() -> None:
    """A refused connection raises StoreError naming the server and what to check, not a psycopg error."""
    with pytest.raises(StoreError) as info:
        await PostgresStore.open("postgresql://someone:secret@127.0.0.1:1/nowhere", timeout=2)
    message = info.value.message
    assert "someone@127.0.0.1:1/nowhere" in message and "check that the server is running" in message
    assert "secret" not in message
    assert not isinstance(info.value.__cause__, StoreError)


def test_malformed_url_is_a_usage_error() -> None:
    """A URL libpq cannot parse is refused by the constructor, before any I/O."""
    with pytest.raises(UsageError):
        PostgresStore("nonsense")


async def test_pool_that_cannot_fill_fails_the_open(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the pool cannot open its connections, ``open`` raises StoreError and leaves nothing open."""
    opened: list[AsyncConnectionPool[Any]] = []

    async def fail(pool: AsyncConnectionPool[Any], wait: bool = False, timeout: float = 30.0) -> None:
        opened.append(pool)
        raise PoolTimeout("pool initialization incomplete")

    monkeypatch.setattr(AsyncConnectionPool, "open", fail)
    with pytest.raises(StoreError, match="check that the server is running"):
        await PostgresStore.open(pg_url, schema=pg_schema)
    assert [pool.closed for pool in opened] == [True]


async def test_closed_store_refuses_calls(pg: PostgresStore) -> None:
    """After close every call raises StoreError(store_closed); closing twice is fine."""
    await pg.close()
    await pg.close()
    with pytest.raises(StoreError) as info:
        await pg.get_session(S("a"))
    assert info.value.code == "store_closed"


@pytest.mark.parametrize(
    ("error", "expected", "code"),
    [
        (pg_errors.SerializationFailure("x"), ConflictError, "seq_conflict"),
        (pg_errors.DeadlockDetected("x"), ConflictError, "seq_conflict"),
        (pg_errors.ForeignKeyViolation("x"), NotFoundError, "session_not_found"),
        (PoolTimeout("couldn't get a connection"), StoreError, "store_unavailable"),
        (pg_errors.AdminShutdown("x"), StoreError, "store_unavailable"),
        (pg_errors.UndefinedTable("x"), StoreError, "store_error"),
    ],
    ids=["serialization", "deadlock", "foreign-key", "pool-timeout", "shutdown", "other"],
)
def test_psycopg_errors_are_translated(error: Exception, expected: type[StoreError], code: str) -> None:
    """Each psycopg error class maps to one stellate error and code."""
    assert isinstance(error, psycopg.Error)
    translated = _translate(error, "append", "db", session_id="a")
    assert type(translated) is expected and translated.code == code
    assert translated.details == {"session_id": "a"}
    is_connection = isinstance(error, PoolTimeout | pg_errors.AdminShutdown)
    assert ("check that the server is running" in translated.message) == is_connection


@pytest.mark.postgres
async def test_connections_dropped_by_the_server_are_replaced(pg_url: str, pg_schema: str) -> None:
    """After a server restart (here: every connection of the store terminated), the next request works."""
    import psycopg

    store = await PostgresStore.open(pg_url, schema=pg_schema, min_size=2)
    try:
        await store.create_session(session_id=SessionId("a"), events=[make_event("session/created", {"label": "a"})])
        await asyncio.sleep(2.5)  # idle: the pool pings before the next use
        with psycopg.connect(pg_url, autocommit=True) as conn:
            killed = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                (store.application_name,),
            ).fetchall()
        assert killed
        assert (await store.get_session(SessionId("a"))).label == "a"
        await store.append(SessionId("a"), [make_event("memory/put", {"content": "still here"})])
    finally:
        await store.close()


async def test_a_holder_whose_database_session_is_gone_is_taken_over_at_once(pg_url: str, pg_schema: str) -> None:
    """A lease tagged with a presence lock nobody holds any more is broken at once, from any host.

    The holder here is alive (this very process), so only its database session tells: terminating its presence
    connection is what a crash of another host's process, or its network, looks like from here.
    """
    holder = await PostgresStore.open(pg_url, schema=pg_schema)
    taker = await PostgresStore.open(pg_url, schema=pg_schema)
    try:
        await holder.create_session(session_id=S("a"))
        lease, _ = await holder.acquire_lease(S("a"), owner="other-host:1:agent", ttl=30)
        with pytest.raises(SessionBusyError):
            await taker.acquire_lease(S("a"), owner="taker", ttl=30)  # a live presence: waited for as before
        with psycopg.connect(pg_url, autocommit=True) as admin_conn:
            admin_conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                (holder._presence.application_name,),
            )
        taken, _ = await taker.acquire_lease(S("a"), owner="taker", ttl=30, wait=5)
        assert taken.owner == "taker"
        with pytest.raises(SessionBusyError) as info:
            await holder.append(S("a"), [make_event("turn/start", {"turn": 1})], lease=lease)
        assert info.value.code == "lease_lost"
    finally:
        await holder.close()
        await taker.close()


async def test_concurrent_first_leases_share_one_presence(pg_url: str, pg_schema: str) -> None:
    """A fresh store's first leases, taken at once, open one presence connection and all get its tag."""
    store = await PostgresStore.open(pg_url, schema=pg_schema)
    try:
        ids = [S(f"s{n}") for n in range(6)]
        for sid in ids:
            await store.create_session(session_id=sid)
        leases = await asyncio.wait_for(
            asyncio.gather(*(store.acquire_lease(sid, owner="w", ttl=30) for sid in ids)), timeout=30
        )
        assert {lease.token.partition(".")[0].rpartition("~")[2] for lease, _ in leases} == {f"pg{store._presence.key}"}
    finally:
        await store.close()
