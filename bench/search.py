"""Message search: what the index costs an append, and how long a query takes, on SQLite and PostgreSQL.

Usage: ``python -m bench.search [--sessions 1000] [--turns 10] [--postgres URL]``. Each backend gets a fresh
database with ``sessions`` sessions of ``turns`` completed turns (a user and an assistant message each, so
``2 * sessions * turns`` messages, one in 50 sessions holding Chinese text); appends go straight to the store
(no model), the same batches with and without the index written (SQLite: the append's index write skipped;
PostgreSQL: the index dropped). Queries: a word of 3+ letters in one session in 50 (the index finds
it), a two-term query, a 2-letter term and a 2-character Chinese term (no trigram: both backends scan), and a
4-character Chinese term. Appends: the mean per turn over the fill; queries: medians of 5 runs of the first page
of 20 hits (PostgreSQL after ``ANALYZE``, as autovacuum would have run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from stellate.log import make_event
from stellate.store import BaseStore, SessionId
from stellate.store.search import MessageSearch, SearchQuery
from stellate.testing.contract_support import turn

QUERIES = {
    "word": "lantern",
    "two terms": "lantern harbour",
    "short": "qz",
    "Chinese, 2 characters": "日本",
    "Chinese, 4 characters": "日本留学",
}


def _texts(n: int, t: int) -> tuple[str, str]:
    if n % 50 == 0:
        return (f"paper lantern by the harbour {t}", "我想去日本留学，预算有限" if t == 1 else f"noted {t}")
    return (
        f"ordinary question number {n} about item {t} qz" if n % 97 == 0 else f"ordinary question {n}-{t}",
        f"an ordinary answer about topic {t}",
    )


async def fill(store: BaseStore, sessions: int, turns: int) -> float:
    """Seconds per append of one turn (six events, two messages), over the whole fill."""
    started = time.perf_counter()
    for n in range(sessions):
        sid = SessionId(f"b-{n:06d}")
        await store.create_session(session_id=sid, events=[make_event("session/created", {"label": f"S{n}"})])
        for t in range(1, turns + 1):
            user, reply = _texts(n, t)
            await store.append(sid, turn(t, user=user, reply=reply))
    return (time.perf_counter() - started) / (sessions * turns)


async def query_times(store: BaseStore) -> dict[str, tuple[float, int]]:
    """Median milliseconds and hits of the first page of each query."""
    assert isinstance(store, MessageSearch)
    out: dict[str, tuple[float, int]] = {}
    for name, text in QUERIES.items():
        times, hits = [], 0
        for _ in range(5):
            started = time.perf_counter()
            page = await store.search_messages(SearchQuery(text=text))
            times.append((time.perf_counter() - started) * 1000)
            hits = len(page.hits)
        out[name] = (statistics.median(times), hits)
    return out


async def sqlite_rows(sessions: int, turns: int) -> list[str]:
    from stellate.store import sqlite as sqlite_store
    from stellate.store.sqlite import SqliteStore

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        store = await SqliteStore.open(f"sqlite:///{Path(folder) / 'indexed.db'}")
        per_turn = await fill(store, sessions, turns)
        rows.append(_row("SQLite", "append a turn (indexed)", per_turn * 1000))
        for name, (ms, hits) in (await query_times(store)).items():
            rows.append(_row("SQLite", f"query: {name} ({hits} hits)", ms))
        await store.close()
        bare = await SqliteStore.open(f"sqlite:///{Path(folder) / 'bare.db'}")
        written = sqlite_store.index_planned
        sqlite_store.index_planned = lambda *args: None  # the same appends, without writing the index rows
        try:
            rows.append(_row("SQLite", "append a turn (no index)", await fill(bare, sessions, turns) * 1000))
        finally:
            sqlite_store.index_planned = written
            await bare.close()
    return rows


async def postgres_rows(url: str, sessions: int, turns: int) -> list[str]:
    import uuid

    import psycopg
    from psycopg import sql

    from stellate.store.postgres import PostgresStore

    rows = []
    for indexed in (True, False):
        schema = f"bench_search_{uuid.uuid4().hex[:8]}"
        store = await PostgresStore.open(url, schema=schema)
        try:
            if not indexed:
                async with store._connection("bench") as conn:
                    await conn.execute("DROP INDEX events_search_trigrams")
            per_turn = await fill(store, sessions, turns)
            rows.append(_row("PostgreSQL", f"append a turn ({'indexed' if indexed else 'no index'})", per_turn * 1000))
            if indexed:
                async with store._connection("bench") as conn:
                    await conn.execute("ANALYZE events")
                    await conn.execute("ANALYZE sessions")
                for name, (ms, hits) in (await query_times(store)).items():
                    rows.append(_row("PostgreSQL", f"query: {name} ({hits} hits)", ms))
        finally:
            await store.close()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    return rows


def _row(backend: str, what: str, ms: float) -> str:
    return f"| {backend} | {what} | {ms:.2f} ms |"


async def run(sessions: int, turns: int, postgres: str | None) -> list[str]:
    """The table's rows for the backends asked for."""
    rows = await sqlite_rows(sessions, turns)
    if postgres:
        rows += await postgres_rows(postgres, sessions, turns)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--postgres", metavar="URL", help="also measure PostgreSQL at this URL")
    args = parser.parse_args()
    print(f"{args.sessions} sessions x {args.turns} turns = {2 * args.sessions * args.turns} messages")
    print("| backend | what | time |\n|---|---|---:|")
    for row in asyncio.run(run(args.sessions, args.turns, args.postgres)):
        print(row)


if __name__ == "__main__":
    main()
