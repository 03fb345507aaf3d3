"""A SQLite file's listing read without the store gives the store's own records, or defers to the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stellate.log.events import make_event
from stellate.store import CompletedTurn, ForkRequest, SessionId
from stellate.store.base import DEFAULT_SPACE
from stellate.store.sqlite import MIGRATIONS, SqliteStore
from stellate.store.sqlite_files import LISTED_SPACE, SCHEMA_VERSION, read_listing
from stellate.testing.store_contract import open_tool_turn, turn

S = SessionId


def test_the_listing_reads_the_current_schema_of_the_default_space() -> None:
    assert SCHEMA_VERSION == len(MIGRATIONS)
    assert LISTED_SPACE == DEFAULT_SPACE


async def test_the_listing_equals_the_stores_records(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        await store.create_session(session_id=S("root"), events=[make_event("label/set", {"label": "根"}), *turn(1)])
        await store.append(S("root"), open_tool_turn(2))  # a turn left open: its lease and cursor are listed
        await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("root"), point=CompletedTurn()))
        await store.append(S("kid"), [make_event("memory/put", {"content": "签证五月截止"})])
        await store.in_space("other").create_session(session_id=S("elsewhere"))
        expected = await store.list_sessions()
        assert read_listing(path) == expected  # while the store holds the file open
    finally:
        await store.close()
    assert [r.id for r in expected] == ["root", "kid"]
    assert read_listing(path) == expected
    assert [r.id for r in read_listing(path, space="other") or []] == ["elsewhere"]


def test_a_file_it_cannot_read_as_is_is_left_to_the_store(tmp_path: Path) -> None:
    assert read_listing(tmp_path / "missing.db") is None
    assert not (tmp_path / "missing.db").exists()
    behind = tmp_path / "behind.db"
    with sqlite3.connect(behind) as conn:
        conn.execute("CREATE TABLE stellate_schema (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO stellate_schema (version) VALUES (?)", (len(MIGRATIONS) - 1,))
    conn.close()
    assert read_listing(behind) is None
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    assert read_listing(garbage) is None
    assert garbage.read_bytes() == b"not a database" * 100
