"""The search indexes of the SQL backends: built by migration from what an older database already holds, and
(SQLite) emptied for a set of sessions inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stellate.store import SessionId
from stellate.store.search import SearchQuery
from stellate.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from stellate.store.sqlite import SqliteStore
from stellate.store.sqlite_search import delete_search_rows
from stellate.testing.search_contract import found, session


async def test_an_sqlite_file_from_before_search_is_indexed_when_opened(tmp_path: Path) -> None:
    """A file at the schema before search (no index tables) gets them at open, filled from its messages."""
    path = tmp_path / "old.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    await session(store, "kept", ("我想去日本留学", "東京はいいです"), ("budget ideas", "hostels"))
    await store.close()
    with sqlite3.connect(path) as db:  # what a release before search left: no search tables, nor any added later
        db.execute("DROP TABLE search_text")
        db.execute("DROP TABLE search_rows")
        db.execute("DROP TABLE blobs")
        db.execute("DELETE FROM stellate_schema WHERE version >= ?", (_version_of(SQLITE_MIGRATIONS, "search_rows"),))
    db.close()
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        assert await store.schema_version() == len(SQLITE_MIGRATIONS)
        page = await store.search_messages(SearchQuery(text="日本"))
        assert found(page) == {("kept", 2)} and page.hits[0].turn == 1
        assert found(await store.search_messages(SearchQuery(text="hostel"))) == {("kept", 10)}
        await session(store, "later", ("more hostels", "ok"))
        assert found(await store.search_messages(SearchQuery(text="hostel"))) == {("kept", 10), ("later", 2)}
    finally:
        await store.close()


async def test_delete_search_rows_forgets_only_the_named_sessions(tmp_path: Path) -> None:
    """Removing sessions' rows (before their events go, in one transaction) leaves the others findable."""
    path = tmp_path / "erase.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    await session(store, "gone", ("secret garden", "shh"))
    await session(store, "stays", ("secret recipe", "ok"))
    await store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    assert delete_search_rows(db, ["gone"]) == 2  # its question and its reply
    db.execute("DELETE FROM events WHERE session_id = 'gone'")
    db.execute("DELETE FROM sessions WHERE id = 'gone'")
    db.execute("COMMIT")
    assert db.execute("SELECT count(*) FROM search_text WHERE search_text MATCH '\"garden\"'").fetchone() == (0,)
    db.close()
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        assert found(await store.search_messages(SearchQuery(text="secret"))) == {("stays", 2)}
        await session(store, "gone", ("secret garden again", "yes"))  # the id and the text may come back
        assert found(await store.search_messages(SearchQuery(text="garden"))) == {("gone", 2)}
    finally:
        await store.close()


def _version_of(migrations: tuple[str, ...], marker: str) -> int:
    """The schema version of the first migration whose script names ``marker``."""
    return next(number for number, script in enumerate(migrations, start=1) if marker in script)


@pytest.mark.postgres
async def test_a_postgres_schema_from_before_search_is_indexed_when_opened(pg_url: str, pg_schema: str) -> None:
    """A schema at the version before search gets the trigram index at open, covering the messages it holds,
    and a search that can use it does."""
    import psycopg
    from psycopg import sql

    from stellate.store.pg_schema import MIGRATIONS
    from stellate.store.postgres import PostgresStore

    store = await PostgresStore.open(pg_url, schema=pg_schema)
    await session(store, "kept", ("我想去日本留学", "可以"), ("budget ideas", "hostels"))
    await store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        conn.execute("DROP INDEX events_search_trigrams")
        conn.execute("DROP TABLE blobs")
        conn.execute("DELETE FROM stellate_schema WHERE version >= %s", (_version_of(MIGRATIONS, "pg_trgm"),))
    store = await PostgresStore.open(pg_url, schema=pg_schema)
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        assert found(await store.search_messages(SearchQuery(text="日本留学"))) == {("kept", 2)}
        assert found(await store.search_messages(SearchQuery(text="hostel"))) == {("kept", 10)}
    finally:
        await store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema)))
        conn.execute("SET enable_seqscan = off")
        plan = conn.execute(
            "EXPLAIN SELECT seq FROM events WHERE type IN ('user/message', 'assistant/message')"
            " AND (data::json->>'content') ILIKE '%hostel%'"
        ).fetchall()
    assert "events_search_trigrams" in " ".join(str(row[0]) for row in plan)


async def test_an_erase_leaves_no_trigram_of_the_erased_text_in_the_index(tmp_path: Path) -> None:
    """FTS5 keeps a deleted row's trigrams until a merge: the erase merges, so none of them stays in the file."""
    path = tmp_path / "scrub.db"
    store = await SqliteStore.open(f"sqlite:///{path}")
    try:
        await session(store, "gone", ("my code is zqxjkv", "noted"))
        await session(store, "stays", ("nothing secret", "ok"))
        await store.erase_sessions([SessionId("gone")])
        assert found(await store.search_messages(SearchQuery(text="secret"))) == {("stays", 2)}
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        blocks = b"".join(bytes(row[0]) for row in db.execute("SELECT block FROM search_text_data"))
    db.close()
    assert blocks and b"qxj" not in blocks and b"zqxjkv" not in path.read_bytes()
