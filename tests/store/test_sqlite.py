"""SQLite-specific rules: a file written at an earlier schema migrates with its data intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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
