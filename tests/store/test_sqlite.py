"""SQLite-specific rules: a file written at an earlier schema migrates with its data intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stellate.log import make_event
from stellate.store import CompletedTurn, ForkRequest, SessionId
from stellate.store.sqlite import MIGRATIONS, SqliteStore
from stellate.testing.store_contract import open_tool_turn, turn

S = SessionId
BEFORE_TURN_OPEN = 5
"""The last schema without ``sessions.turn_open`` (migrations are append-only, so this never changes)."""


async def _write_forest(path: Path) -> None:
    """Sessions with and without an open turn, and a fork of one that has one, written by the current store."""
    store = await SqliteStore.open(f"sqlite:///{path}")
    await store.create_session(session_id=S("closed"), events=turn(1))
    await store.create_session(session_id=S("open"), events=turn(1))
    await store.append(S("open"), open_tool_turn(2))
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("open"), point=CompletedTurn()))
    await store.create_session(session_id=S("half"), events=turn(1)[:2])
    await store.close()


def _file_at_schema(path: Path, version: int, source: Path) -> None:
    """A file migrated to ``version`` only, holding ``source``'s rows in every column that schema has."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE stellate_schema (version INTEGER NOT NULL)")
    for number, script in enumerate(MIGRATIONS[:version], start=1):
        conn.executescript(script)
        conn.execute("INSERT INTO stellate_schema (version) VALUES (?)", (number,))
    conn.execute("ATTACH ? AS source", (str(source),))
    for table in ("sessions", "events"):
        columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA main.table_info({table})"))
        conn.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM source.{table}")
    conn.execute("DETACH source")
    conn.close()


async def test_a_file_from_before_turn_open_lists_its_open_turns_after_migrating(tmp_path: Path) -> None:
    """Opening a file at the schema before ``turn_open`` fills the column from each cursor; appends then keep it."""
    await _write_forest(tmp_path / "current.db")
    _file_at_schema(tmp_path / "old.db", BEFORE_TURN_OPEN, tmp_path / "current.db")
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        flags = {d.id: d.turn_open for d in await store.list_digests()}
        assert flags == {"closed": False, "open": True, "kid": False, "half": True}
        for digest in await store.list_digests():
            assert digest.turn_open == (await store.get_session(S(digest.id))).cursor.turn_open
        await store.repair(S("open"))
        await store.append(S("half"), turn(1)[2:])
        assert not any(d.turn_open for d in await store.list_digests())
    finally:
        await store.close()


async def test_a_lease_holder_writes_at_its_known_head_without_reading_the_row(tmp_path: Path) -> None:
    """The holder's row update is conditional; another process's write in between sends it the general way."""
    path = f"sqlite:///{tmp_path / 'held.db'}"
    store, other = await SqliteStore.open(path), await SqliteStore.open(path)
    try:
        first = turn(1)
        await store.create_session(session_id=S("s"), events=first)
        lease, _ = await store.acquire_lease(S("s"), owner="me")
        statements: list[str] = []
        assert store._db.loop_conn is not None
        store._db.loop_conn.set_trace_callback(statements.append)
        events = turn(2)
        await store.append(S("s"), events[:2], expected_seq=len(first), lease=lease)
        assert not [s for s in statements if s.startswith("SELECT")], statements  # planned on the taken row
        await other.append(S("s"), [make_event("memory/put", {"content": "noted"})])  # free-standing
        statements.clear()
        head = len(first) + 2
        written = await store.append(S("s"), events[2:], expected_seq=head, lease=lease, release_lease=True)
        assert any(s.startswith("SELECT") for s in statements)  # the known head was stale: the row was read
        assert [e.seq for e in written] == list(range(head + 1, head + 1 + len(events) - 2))
        record = await other.get_session(S("s"))
        assert record.lease is None and record.next_seq == written[-1].seq + 1 and record.slots.memory == "noted"
        assert [e.seq for e in await other.read_events(S("s"))] == list(range(record.next_seq))
    finally:
        await store.close()
        await other.close()
