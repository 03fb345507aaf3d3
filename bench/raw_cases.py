"""The floors: plain ``sqlite3`` / ``psycopg`` doing the same writes and reads with no framework around them.

B1's floor is the one peer-bench.md uses, with stellate's rows: the 6 event rows of one turn (stellate's
``events`` table and JSON payloads, ``json.dumps`` inside the timed window), inserted in one transaction;
the next seq is kept in memory, so there is no read. SQLite runs in WAL at ``synchronous=NORMAL``, stellate's
own setting. A diagnostic variant replays exactly the statements stellate's store issues per turn.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench.common import EVENTS_PER_TURN, PG_URL, ms, per_fork, per_turn, pg_bytes, pg_settle, sqlite_bytes, timed
from bench.stellate_cases import Backend, _forest, turn_template
from stellate.store._sql import select_digests_sql
from stellate.store.base import DEFAULT_SPACE
from stellate.store.sqlite import MIGRATIONS

_EVENTS_DDL = MIGRATIONS[0].split("CREATE TABLE events", 1)[1]
EVENTS_TABLE = "CREATE TABLE events" + _EVENTS_DDL.rstrip().rstrip(";")
INSERT = "INSERT INTO events (session_id, seq, type, time, data, ignorable) VALUES (?, ?, ?, ?, ?, ?)"


def _payloads() -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.data) for e in asyncio.run(turn_template())]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class _RawLog:
    """One session's log in a bare ``events`` table; ``turn()`` is the floor's unit of work."""

    def __init__(self, conn: sqlite3.Connection, payloads: list[tuple[str, dict[str, Any]]]) -> None:
        self.conn, self.payloads, self.seq, self.turns = conn, payloads, 0, 0
        conn.execute(EVENTS_TABLE)

    def turn(self) -> None:
        self.turns += 1
        now = time.time_ns() // 1_000_000
        rows = []
        for offset, (kind, data) in enumerate(self.payloads):
            body = dict(data, turn=self.turns) if "turn" in data else data
            rows.append(("s1", self.seq + offset, kind, now, json.dumps(body, separators=(",", ":")), 0))
        self.conn.execute("BEGIN")
        self.conn.executemany(INSERT, rows)
        self.conn.execute("COMMIT")
        self.seq += len(rows)


def b1(params: dict[str, Any]) -> dict[str, Any]:
    """K timed raw turns after H real ones."""
    if params.get("db") == "pg":
        return _b1_pg(params)
    path = Path(params["dir"]) / "raw.db"
    conn = _connect(path)
    log = _RawLog(conn, _payloads())
    for _ in range(params["h"]):
        log.turn()
    size_before = sqlite_bytes(path, conn)
    times = [timed(log.turn)[0] for _ in range(params["k"])]
    size_after = sqlite_bytes(path, conn)
    count = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    assert count == EVENTS_PER_TURN * (params["h"] + params["k"]), count
    conn.close()
    return {"ms": times, **per_turn(size_before, size_after, params["k"])}


def _b1_pg(params: dict[str, Any]) -> dict[str, Any]:
    import psycopg
    from psycopg import sql

    schema, payloads = params["schema"], _payloads()
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(EVENTS_TABLE.replace("INTEGER", "BIGINT").replace(") WITHOUT ROWID", ")"))
        state = {"seq": 0, "turns": 0}

        def turn() -> None:
            state["turns"] += 1
            now = time.time_ns() // 1_000_000
            rows = []
            for offset, (kind, data) in enumerate(payloads):
                body = dict(data, turn=state["turns"]) if "turn" in data else data
                rows.append(("s1", state["seq"] + offset, kind, now, json.dumps(body, separators=(",", ":")), 0))
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(INSERT.replace("?", "%s"), rows)
            state["seq"] += len(rows)

        for _ in range(params["h"]):
            turn()
        pg_settle(schema)
        size_before = pg_bytes(schema)
        times = [timed(turn)[0] for _ in range(params["k"])]
        size_after = pg_bytes(schema)
    return {"ms": times, **per_turn(size_before, size_after, params["k"])}


def b1_shape(params: dict[str, Any]) -> dict[str, Any]:
    """Diagnostic: the SQL stellate's SQLite store runs for one turn, replayed with nothing else around it.

    Durability ``step``: one record read (the agent's refresh), then three write transactions (3, 2 and 1
    events), each ``BEGIN IMMEDIATE``, read the record, insert the rows, update the record, ``COMMIT``.
    """
    path = Path(params["dir"]) / "shape.db"
    conn = _connect(path)
    for statement in filter(str.strip, MIGRATIONS[0].split(";")):
        conn.execute(statement)
    cursor_json = json.dumps({"next_seq": 0, "last_turn": 0, "turn_open": False}, separators=(",", ":"))
    conn.execute(
        "INSERT INTO sessions (id, inherited, created_at, label, status, config, last_activity, turn_count,"
        " next_seq, cursor) VALUES ('s1', 0, 0, 'bench', 'active', '{}', 0, 0, 0, ?)",
        (cursor_json,),
    )
    log = _ShapeLog(conn, _payloads(), params.get("durability", "step"))
    for _ in range(params["h"]):
        log.turn()
    times = [timed(log.turn)[0] for _ in range(params["k"])]
    conn.close()
    return {"ms": times}


class _ShapeLog:
    SELECT = "SELECT * FROM sessions WHERE id = 's1'"
    UPDATE = (
        "UPDATE sessions SET label = ?, status = ?, system_prompt = ?, memory = ?, insight = ?, config = ?,"
        " last_activity = ?, turn_count = ?, next_seq = ?, cursor = ? WHERE id = 's1'"
    )

    def __init__(self, conn: sqlite3.Connection, payloads: list[tuple[str, dict[str, Any]]], durability: str):
        self.conn, self.payloads, self.seq, self.turns = conn, payloads, 0, 0
        self.groups = [3, 2, 1] if durability == "step" else [6]

    def turn(self) -> None:
        self.turns += 1
        self.conn.execute(self.SELECT).fetchone()
        index = 0
        for size in self.groups:
            now = time.time_ns() // 1_000_000
            rows = []
            for kind, data in self.payloads[index : index + size]:
                body = dict(data, turn=self.turns) if "turn" in data else data
                rows.append(("s1", self.seq, kind, now, json.dumps(body, separators=(",", ":")), 0))
                self.seq += 1
            index += size
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute(self.SELECT).fetchone()
            self.conn.executemany(INSERT, rows)
            cursor = json.dumps({"next_seq": self.seq, "last_turn": self.turns}, separators=(",", ":"))
            state = ("bench", "active", None, None, None, "{}", now, self.turns, self.seq, cursor)
            self.conn.execute(self.UPDATE, state)
            self.conn.execute("COMMIT")


def b2(params: dict[str, Any]) -> dict[str, Any]:
    """Forks of an N-row log: a naive copy of the rows, and a by-reference fork (one lineage row)."""
    path = Path(params["dir"]) / "raw.db"
    conn = _connect(path)
    log = _RawLog(conn, _payloads())
    for _ in range(params["n"] // EVENTS_PER_TURN):
        log.turn()
    conn.execute("CREATE TABLE forks (id TEXT PRIMARY KEY, source_id TEXT NOT NULL, fork_seq INTEGER NOT NULL)")
    out = {}
    for name, fork in (("copy", _copy_fork), ("reference", _reference_fork)):
        before = sqlite_bytes(path, conn)
        children = [f"{name}{i}" for i in range(params["forks"])]
        times = [timed(lambda c=c, fork=fork: fork(conn, c, log.seq))[0] for c in children]
        out[name] = {"ms": times, **per_fork(before, sqlite_bytes(path, conn), params["forks"])}
    conn.close()
    return out


def _copy_fork(conn: sqlite3.Connection, child: str, rows: int) -> None:
    conn.execute("BEGIN")
    conn.execute(
        "INSERT INTO events SELECT ?, seq, type, time, data, ignorable FROM events WHERE session_id = 's1' AND seq < ?",
        (child, rows),
    )
    conn.execute("COMMIT")


def _reference_fork(conn: sqlite3.Connection, child: str, rows: int) -> None:
    conn.execute("BEGIN")
    conn.execute("INSERT INTO forks VALUES (?, 's1', ?)", (child, rows - 1))
    conn.execute("COMMIT")


def b3(params: dict[str, Any]) -> dict[str, Any]:
    """Read an N-row log and decode every row's JSON (what any cold open must at least do)."""
    path = Path(params["dir"]) / "raw.db"
    conn = _connect(path)
    log = _RawLog(conn, _payloads())
    for _ in range(params["n"] // EVENTS_PER_TURN):
        log.turn()
    conn.close()
    times = []
    for _ in range(params["runs"]):
        start = time.perf_counter()
        fresh = sqlite3.connect(str(path))
        rows = fresh.execute("SELECT seq, type, time, data, ignorable FROM events WHERE session_id = 's1' ORDER BY seq")
        decoded = [(seq, kind, stamp, json.loads(data), bool(flag)) for seq, kind, stamp, data, flag in rows]
        times.append(ms(time.perf_counter() - start))
        fresh.close()
        assert len(decoded) == log.seq
    return {"ms": times}


_DIGEST_QUERY = select_digests_sql(placeholder="?")


def b4(params: dict[str, Any]) -> dict[str, Any]:
    """A bare ``SELECT`` of the digest's columns of S session rows (stellate's table, built by stellate's store).

    The same query stellate's listing runs, fetched as tuples: only what a digest holds, and nothing built.
    """

    async def build() -> None:
        store = await Backend(params).open()
        await _forest(store, params["sessions"], params.get("per_root", 100))
        await store.close()

    asyncio.run(build())
    conn = sqlite3.connect(str(Path(params["dir"]) / "stellate.db"))
    times = []
    for _ in range(params["runs"]):
        elapsed, rows = timed(lambda: conn.execute(_DIGEST_QUERY, (DEFAULT_SPACE,)).fetchall())
        times.append(elapsed)
        assert len(rows) == params["sessions"]
    conn.close()
    return {"ms": times}
