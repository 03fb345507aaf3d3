"""Property: on any forest of messages, the SQL indexes find exactly the messages a scan finds.

The memory store reads every message and applies the matching rule (`stellate.store.search.matches`) directly;
SQLite answers through its trigram index for long terms and ``LIKE`` for short ones. Texts mix ASCII of both
cases, Chinese, and characters with a meaning in FTS5 or ``LIKE``; queries are pieces of those texts, so hits
are common, plus terms that may be in no message.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from stellate.log import make_event
from stellate.store import BaseStore, ForkRequest, SessionId
from stellate.store.memory import MemoryStore
from stellate.store.search import MAX_LIMIT, SearchQuery
from stellate.store.sqlite import SqliteStore
from stellate.testing.contract_support import turn

ALPHABET = 'abAB日本学 %_"*\\-'
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=12).filter(str.strip)
forests = st.lists(
    st.tuples(st.lists(st.tuples(texts, texts), min_size=1, max_size=3), st.booleans(), st.booleans()),
    min_size=1,
    max_size=4,
)
queries = st.lists(st.text(alphabet=ALPHABET.replace(" ", ""), min_size=1, max_size=4), min_size=1, max_size=2)


async def _grow(store: BaseStore, forest: list[tuple[list[tuple[str, str]], bool, bool]]) -> None:
    for n, (turns, forked, archived) in enumerate(forest):
        sid = SessionId(f"s{n}")
        source = SessionId(f"s{n - 1}") if forked and n else None
        fork = ForkRequest(source_id=source) if source else None
        record = await store.create_session(session_id=sid, fork=fork)
        await store.append(sid, [make_event("session/created", {"label": sid})])
        first = record.cursor.last_turn + 1
        for offset, (user, reply) in enumerate(turns):
            await store.append(sid, turn(first + offset, user=user, reply=reply))
        if archived:
            await store.append(sid, [make_event("session/archived", {})])


async def _hits(store: BaseStore, query: SearchQuery) -> set[tuple[str, int, int, str]]:
    page = await store.search_messages(query)  # type: ignore[attr-defined]
    assert page.next_offset is None
    event("some hits" if page.hits else "no hit")  # --hypothesis-show-statistics: both kinds are common
    return {(h.session_id, h.seq, h.turn, h.role) for h in page.hits}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forest=forests, terms=queries, archived=st.booleans())
def test_sqlite_finds_what_a_scan_finds(
    forest: list[tuple[list[tuple[str, str]], bool, bool]], terms: list[str], archived: bool
) -> None:
    """The same forest and query give the same hits (session, seq, turn, role) on both backends."""

    async def check() -> None:
        query = SearchQuery(text=" ".join(terms), include_archived=archived, limit=MAX_LIMIT)
        with tempfile.TemporaryDirectory() as folder:
            scanned, indexed = MemoryStore(), await SqliteStore.open(str(Path(folder) / "p.db"))
            try:
                for store in (scanned, indexed):
                    await _grow(store, forest)
                assert await _hits(indexed, query) == await _hits(scanned, query)
            finally:
                await indexed.close()

    asyncio.run(check())


@pytest.mark.postgres
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forest=forests, terms=queries, archived=st.booleans())
def test_postgres_finds_what_a_scan_finds(
    pg_url: str, forest: list[tuple[list[tuple[str, str]], bool, bool]], terms: list[str], archived: bool
) -> None:
    """The same rule holds for PostgreSQL's trigram index and ``ILIKE``."""
    import psycopg
    from psycopg import sql

    from stellate.store.postgres import PostgresStore

    schema = f"stellate_test_{uuid.uuid4().hex[:12]}"

    async def check() -> None:
        query = SearchQuery(text=" ".join(terms), include_archived=archived, limit=MAX_LIMIT)
        scanned, indexed = MemoryStore(), await PostgresStore.open(pg_url, schema=schema, max_size=2)
        try:
            for store in (scanned, indexed):
                await _grow(store, forest)
            assert await _hits(indexed, query) == await _hits(scanned, query)
        finally:
            await indexed.close()

    try:
        asyncio.run(check())
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
