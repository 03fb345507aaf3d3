"""Helpers every case shares: timing, on-disk sizes, PostgreSQL schemas and stellate's turn template."""

from __future__ import annotations

import copy
import os
import sqlite3
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stellate.log.events import Event, NewEvent

PG_URL = os.environ.get("STELLATE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")

#: Events of one plain stellate turn (one step, no tools): turn/start, user/message, step/start,
#: assistant/message, step/end, model/called, turn/end. B2/B3 sizes are in events; peers get the same number
#: of turns, and the raw floors write as many rows per turn.
EVENTS_PER_TURN = 7


def ms(seconds: float) -> float:
    return seconds * 1000.0


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(milliseconds, result) of one call."""
    start = time.perf_counter()
    out = fn()
    return ms(time.perf_counter() - start), out


async def atimed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(milliseconds, result) of one awaited call."""
    start = time.perf_counter()
    out = await fn()
    return ms(time.perf_counter() - start), out


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- sizes -----------------------------------------------------------------------------------------


def sqlite_bytes(path: str | Path, conn: sqlite3.Connection | None = None) -> tuple[int, int]:
    """(file size, payload bytes) of a SQLite file, with its WAL folded in first (``wal_checkpoint(TRUNCATE)``).

    The payload (``dbstat``: the bytes of every row and index entry) is what was logically written; the file
    grows by whole 4 KiB pages, too coarse for a write of a few hundred bytes.
    """
    own = conn is None
    db = conn if conn is not None else sqlite3.connect(str(path))
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        payload = db.execute("SELECT COALESCE(SUM(payload), 0) FROM dbstat").fetchone()[0]
    finally:
        if own:
            db.close()
    wal = Path(f"{path}-wal")
    return Path(path).stat().st_size + (wal.stat().st_size if wal.exists() else 0), int(payload)


def pg_bytes(schema: str, url: str = PG_URL) -> tuple[int, int]:
    """(on-disk size of every table with its TOAST and indexes, sum of the rows' sizes) in ``schema``."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        disk = rows = 0
        for table in tables:
            name = sql.Identifier(schema, table)
            query = sql.SQL(
                "SELECT pg_total_relation_size({}), (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM {} t)"
            )
            found = conn.execute(query.format(sql.Literal(f'"{schema}"."{table}"'), name)).fetchone()
            if found:
                disk, rows = disk + int(found[0]), rows + int(found[1])
    return disk, rows


def pg_settle(schema: str, url: str = PG_URL) -> None:
    """``VACUUM ANALYZE`` every table of ``schema``, untimed, right after a bulk pre-population.

    Without it the server's autovacuum processes the freshly loaded rows in the middle of the timed part (on
    2 cores it slowed stellate's and LangGraph's forks several-fold, at random), and the planner works from
    statistics that do not know the rows yet. The fresh-statistics case is measured on its own (docs).
    """
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        for table in tables:
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, table)))


@contextmanager
def pg_schema(url: str = PG_URL) -> Iterator[str]:
    """A throwaway schema name, dropped with everything in it afterwards."""
    import psycopg
    from psycopg import sql

    name = f"stellate_bench_{uuid.uuid4().hex[:10]}"
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def pg_problem(url: str = PG_URL) -> str | None:
    """Why the PostgreSQL server cannot be used, or None."""
    try:
        import psycopg
    except ImportError:
        return 'psycopg is not installed (pip install "stellate[postgres]")'
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


# -- stellate history --------------------------------------------------------------------------


def turn_events(template: list[Event], first_turn: int, count: int) -> list[NewEvent]:
    """``count`` copies of a recorded turn, renumbered from ``first_turn``, ready to append."""
    out: list[NewEvent] = []
    for number in range(first_turn, first_turn + count):
        for event in template:
            data = copy.deepcopy(event.data)
            if "turn" in data:
                data["turn"] = number
            out.append(NewEvent(type=event.type, data=data, time=event.time))
    return out


def per_turn(before: tuple[int, int], after: tuple[int, int], turns: int) -> dict[str, float]:
    """B1 size fields from (file, payload) before and after ``turns`` timed turns."""
    return {
        "file_bytes": before[0],
        "bytes_per_turn": (after[1] - before[1]) / turns,
        "file_growth": (after[0] - before[0]) / turns,
    }


def per_fork(before: tuple[int, int], after: tuple[int, int], forks: int) -> dict[str, float]:
    """B2 size fields from (file, payload) before and after ``forks`` forks."""
    return {"bytes": (after[1] - before[1]) / forks, "file_growth": (after[0] - before[0]) / forks}
