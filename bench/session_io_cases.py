"""B11: big sessions (issue 22, goal 6): export and import of an N-event session, and a cold `context_at`.

Each beside its floor: the export beside a bare ``SELECT`` of the events' columns written as JSON lines with the
stdlib (the stored ``data`` text spliced in, as the cheapest correct line is made); the import beside a bare
``executemany`` of the same rows into a table shaped like stellate's (each line decoded, its data encoded
again: what any import of a JSON file must do), in one transaction, with the store's durability settings.
A cold ``context_at(seq)`` (a fresh store and `Agent`) at an early, a middle and the last model call, beside a
cold read of the session's record and a cold `Session.load` of the whole session.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench.common import EVENTS_PER_TURN, atimed, ms
from bench.fakes import InstantLLM
from bench.plan import B11_ROWS as ROWS
from bench.stellate_cases import _new_session
from stellate.agent.agent import Agent
from stellate.agent.inspection import context_at
from stellate.session.session import Session
from stellate.session.types import SessionRuntime
from stellate.store import SessionId
from stellate.store.jsonl import export_session, import_session
from stellate.store.sqlite import SqliteStore

_EVENTS_DDL = """CREATE TABLE events (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,
    data TEXT NOT NULL, ignorable INTEGER NOT NULL, PRIMARY KEY (session_id, seq)
) WITHOUT ROWID"""


def _export_floor(db_path: Path, sid: str, out: Path) -> int:
    conn = sqlite3.connect(str(db_path))
    rows = conn.execute("SELECT seq, type, time, data, ignorable FROM events WHERE session_id = ? ORDER BY seq", (sid,))
    count = 0
    with open(out, "w", encoding="utf-8") as fp:
        for seq, kind, stamp, data, flag in rows:
            tail = ',"ignorable":true}\n' if flag else "}\n"
            fp.write(f'{{"seq":{seq},"type":{json.dumps(kind)},"time":{stamp},"data":{data}{tail}')
            count += 1
    conn.close()
    return count


def _import_floor(source: Path, db_path: Path, sid: str) -> int:
    conn = sqlite3.connect(str(db_path), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(_EVENTS_DDL)
    with open(source, encoding="utf-8") as fp:
        next(fp)  # the header
        rows = []
        for line in fp:
            raw = json.loads(line)
            if "seq" not in raw:
                break  # the blobs
            data = json.dumps(raw["data"], ensure_ascii=False, separators=(",", ":"))
            rows.append((sid, raw["seq"], raw["type"], raw["time"], data, int(bool(raw.get("ignorable")))))
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.execute("COMMIT")
    conn.close()
    return len(rows)


_RUNTIME = SessionRuntime(llm=InstantLLM())


def _fresh(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def _build(directory: Path, n: int) -> tuple[Path, str, int, list[int]]:
    base = directory / "base.db"
    store = await SqliteStore.open(f"sqlite:///{base}")
    sid = await _new_session(store, n // EVENTS_PER_TURN)
    events = (await store.get_session(SessionId(sid))).next_seq
    await Session.load(store, SessionId(sid), SessionRuntime(llm=InstantLLM()))  # a first open stores the segments
    replies = await store.read_events(SessionId(sid), types=("assistant/message",))
    calls = [e.seq for e in replies if "provider" in e.data]
    await store.close()
    return base, sid, events, calls


async def b11(params: dict[str, Any]) -> dict[str, Any]:
    """Export, import and cold ``context_at`` of one N-event session (SQLite file), with their floors."""
    directory, runs = Path(params["dir"]), params["runs"]
    base, sid, events, calls = await _build(directory, params["n"])
    out: dict[str, list[float]] = {key: [] for key in ROWS}
    exported = directory / "export.jsonl"
    for _ in range(runs):  # interleaved: each floor right after its stellate run
        store = await SqliteStore.open(f"sqlite:///{base}")
        elapsed, count = await atimed(lambda s=store: export_session(s, SessionId(sid), exported))
        await store.close()
        assert count == events, (count, events)
        out["export"].append(elapsed)
        start = time.perf_counter()
        assert _export_floor(base, sid, directory / "floor.jsonl") == events
        out["export_floor"].append(ms(time.perf_counter() - start))
        target = directory / "import.db"
        _fresh(target)
        store = await SqliteStore.open(f"sqlite:///{target}")
        elapsed, record = await atimed(lambda s=store: import_session(s, exported, session_id=SessionId("imported")))
        await store.close()
        assert record.next_seq == events
        out["import"].append(elapsed)
        _fresh(target)
        start = time.perf_counter()
        assert _import_floor(exported, target, "imported") == events
        out["import_floor"].append(ms(time.perf_counter() - start))
    steps = {"ctx_early": calls[0], "ctx_middle": calls[len(calls) // 2], "ctx_last": calls[-1]}
    for _ in range(3 * runs):  # cheap and noisy: more runs
        for key, step in steps.items():
            out[key].append(await _cold_context(base, sid, step))
        out["record"].append(await _cold(base, lambda s: s.get_session(SessionId(sid))))
        out["load"].append(await _cold(base, lambda s: Session.load(s, SessionId(sid), _RUNTIME)))
    return {key: {"ms": values, "events": events} for key, values in out.items()}


async def _cold(base: Path, call: Any) -> float:
    store = await SqliteStore.open(f"sqlite:///{base}")
    elapsed, _ = await atimed(lambda: call(store))
    await store.close()
    return elapsed


async def _cold_context(base: Path, sid: str, step: int) -> float:
    store = await SqliteStore.open(f"sqlite:///{base}")
    agent = Agent(store, llm=InstantLLM())
    elapsed, found = await atimed(lambda: context_at(agent, sid, step))
    assert found.step == step and found.messages, found
    await store.close()
    return elapsed
