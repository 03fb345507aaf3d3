"""Erases racing other processes: turns, forks and slot writes either land before an erase or get session_not_found,
and a kill -9 in the middle of an erase leaves the whole session or none of it (every kept dependent readable).

Real processes on one SQLite file or one PostgreSQL schema (the fixtures of the lease tests).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_lease_processes import new_session, read_line, store, store_url, workers
from test_lease_processes import start as start_lease_worker
from test_lease_processes import start as start_worker

from stellate import Agent
from stellate.errors import NotFoundError, SessionBusyError
from stellate.llm.scripted import ScriptedLLM
from stellate.log import check_log, make_event
from stellate.store import BaseStore, Boundary, ForkRequest, SessionId
from stellate.testing.contract_support import turn

WORKER = str(Path(__file__).with_name("erase_worker.py"))
__all__ = ["store", "store_url", "workers"]  # fixtures shared with the lease tests


def start(workers: list[subprocess.Popen[str]], *args: str) -> subprocess.Popen[str]:
    return start_worker(workers, *args, script=WORKER)


def stored_rows(store_url: str, ids: list[str]) -> int:
    """Rows of ``events``, ``fold_segments`` and ``sessions`` that still name one of ``ids``."""
    tables = ("events", "fold_segments")
    if store_url.startswith("sqlite:///"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            marks = ", ".join("?" * len(ids))
            count = sum(
                db.execute(f"SELECT count(*) FROM {t} WHERE session_id IN ({marks})", ids).fetchone()[0] for t in tables
            )
            return count + db.execute(f"SELECT count(*) FROM sessions WHERE id IN ({marks})", ids).fetchone()[0]
    import psycopg

    base, schema = store_url.split("#", 1)
    with psycopg.connect(base, options=f"-c search_path={schema}") as conn:
        count = sum(
            conn.execute(f"SELECT count(*) FROM {t} WHERE session_id = ANY(%s)", (ids,)).fetchone()[0] for t in tables
        )  # type: ignore[index]
        return count + conn.execute("SELECT count(*) FROM sessions WHERE id = ANY(%s)", (ids,)).fetchone()[0]  # type: ignore[index]


@pytest.mark.parametrize("dependents", ["cascade", "keep"])
async def test_turns_forks_and_slot_writes_racing_erases_never_leave_half_a_session(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], dependents: str
) -> None:
    """Another process keeps writing to sessions while they are erased one by one: each of its writes lands
    before the erase or is refused as gone; nothing of an erased session remains; kept forks read whole logs."""
    async with Agent(store, llm=ScriptedLLM(default="ok")) as agent:
        ids = [(await agent.create_session(label=f"s{n}")).id for n in range(5)]
        for sid in ids:
            await agent.turn(sid, "first")
        racer = start(workers, store_url, "race", "60", *ids)
        assert await read_line(racer, timeout=60) == "READY"
        for sid in ids:
            await asyncio.sleep(0.1)
            await agent.erase_session(sid, dependents=dependents, busy_timeout=30)  # type: ignore[arg-type]
        lines = [await read_line(racer, timeout=60)]
        while not lines[-1].startswith("DONE"):
            lines.append(await read_line(racer, timeout=60))
    assert racer.wait(timeout=30) == 0
    assert [line for line in lines if line.startswith("FAIL")] == []
    _, done, gone = lines[-1].split()
    assert int(done) > 0 and int(gone) >= len(ids)

    for sid in ids:
        with pytest.raises(NotFoundError):
            await store.get_session(SessionId(sid))
    erased = [t.id for t in await store.list_tombstones()]
    assert set(ids) <= set(erased)
    assert stored_rows(store_url, erased) == 0
    remaining = await store.list_sessions()
    if dependents == "cascade":
        assert remaining == []
    for child in remaining:  # forks made before their source's erase, each given its own copy
        assert child.source_id in ids and child.inherited == 0
        events = await store.read_events(child.id)
        check_log(events)
        assert events[0].type == "session/created" and len(events) == child.next_seq


async def _victim_tree(store: BaseStore) -> tuple[str, list[str]]:
    """A root of 3,000 events and four forks of it (by reference), each with a turn of its own."""
    root = SessionId("victim")
    await store.create_session(session_id=root, events=[make_event("session/created", {"label": "victim"})])
    batch = [event for n in range(1, 51) for event in turn(n, user=f"question {n}", reply=f"answer {n}")]
    for first in range(0, 10):
        numbered = [event for n in range(1, 51) for event in turn(first * 50 + n)]
        await store.append(root, numbered if first else batch)
    children = []
    head = (await store.get_session(root)).next_seq - 1
    for n in range(4):
        child = SessionId(f"kept-{n}")
        await store.create_session(
            session_id=child, parent_id=root, fork=ForkRequest(source_id=root, point=Boundary(seq=head))
        )
        await store.append(child, turn(501, user=f"child {n}"))
        children.append(child)
    return root, children


def _dump(events: list[Any]) -> list[tuple[int, str, str]]:
    return [(e.seq, e.type, repr(e.data)) for e in events]


async def test_a_kill_during_an_erase_leaves_all_of_the_session_or_none(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]]
) -> None:
    """SIGKILL at growing delays into a keep-the-dependents erase: after each, the root is whole (and its forks
    read through it) or erased with a tombstone (and each fork holds its whole log); never anything between."""
    root, children = await _victim_tree(store)
    full = (await store.get_session(SessionId(root))).next_seq
    expected = {child: _dump(await store.read_events(SessionId(child))) for child in children}
    outcomes = []
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28):
        eraser = start(workers, store_url, "erase", "keep", root)
        assert await read_line(eraser, timeout=60) == "ERASING"
        await asyncio.sleep(delay)
        os.kill(eraser.pid, signal.SIGKILL)
        eraser.wait(timeout=30)
        fresh = await _reopen(store_url)
        try:
            outcome = await _check_whole_or_none(fresh, root, children, full, expected)
        finally:
            await fresh.close()
        outcomes.append(outcome)
        if outcome == "erased":
            break
    print(f"\n{store_url.split(':')[0]}: outcomes by kill delay: {outcomes}")
    assert stored_rows(store_url, [root]) in (0, 1 + full)


async def _reopen(store_url: str) -> BaseStore:
    sys.path.insert(0, str(Path(WORKER).parent))
    try:
        from lease_worker import open_for_test
    finally:
        sys.path.pop(0)
    return await open_for_test(store_url)


async def _check_whole_or_none(
    store: BaseStore, root: str, children: list[str], full: int, expected: dict[str, list[tuple[int, str, str]]]
) -> str:
    stones = [t.id for t in await store.list_tombstones()]
    try:
        record = await store.get_session(SessionId(root))
    except NotFoundError:
        assert stones == [root]
        for child in children:
            assert (await store.get_session(SessionId(child))).inherited == 0
            assert _dump(await store.read_events(SessionId(child))) == expected[child]
        return "erased"
    assert stones == []
    assert record.next_seq == full and len(await store.read_events(SessionId(root))) == full
    for child in children:
        assert (await store.get_session(SessionId(child))).inherited == full
        assert _dump(await store.read_events(SessionId(child))) == expected[child]
    return "whole"


async def test_an_erase_waits_for_a_turn_in_another_process_or_answers_busy(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """While another process runs a turn, an erase with no wait answers session_busy and erases nothing; one
    that waits erases right after that turn completed, and the turn is never cut short."""
    sid = await new_session(store)
    go = tmp_path / "go"
    holder = start_lease_worker(workers, store_url, sid, "hold", str(go), "30")
    assert await read_line(holder) == "IN-MODEL"
    async with Agent(store, llm=ScriptedLLM(default="ok")) as agent:
        with pytest.raises(SessionBusyError) as info:
            await agent.erase_session(sid, busy_timeout=0)
        assert info.value.code == "session_busy"
        assert (await store.get_session(SessionId(sid))).turn_count == 1
        waiting = asyncio.create_task(agent.erase_session(sid, busy_timeout=30))
        await asyncio.sleep(0.3)
        assert not waiting.done(), "the erase waits for the turn"
        go.write_text("now")
        assert await read_line(holder) == "DONE completed"
        plan = await waiting
    assert plan.erased == (sid,)
    assert holder.wait(timeout=30) == 0
    with pytest.raises(NotFoundError):
        await store.get_session(SessionId(sid))
