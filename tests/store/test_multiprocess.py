"""Several OS processes appending to one session: nothing lost, nothing doubled, the log stays valid.

Each backend that can be shared between processes (an SQLite file, a PostgreSQL database) gets four
spawned writers. Two append ``memory/put`` events blindly (``expected_seq=None``); two append whole
turns guarded by the expected seq, re-reading the head and retrying on ``seq_conflict``, the way a turn
runner does. Any other error, ``store_locked`` included, fails the test.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import queue
import time
import traceback
from collections import Counter
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from stellate.errors import ConflictError
from stellate.log import check_log, make_event
from stellate.store import BaseStore, SessionId
from stellate.store.sqlite import SqliteStore
from stellate.testing.store_contract import turn

WRITERS = 4
APPENDS = 50
SID = SessionId("shared")


async def _open(url: str, schema: str | None) -> BaseStore:
    if url.startswith("sqlite"):
        return await SqliteStore.open(url)
    from stellate.store.postgres import PostgresStore

    return await PostgresStore.open(url, schema=schema, max_size=2)


async def _append_turn(store: BaseStore, tag: str) -> int:
    """Append one whole turn at the head, retrying on a stale head; returns the number of retries."""
    for retries in range(1000):
        record = await store.get_session(SID)
        try:
            await store.append(SID, turn(record.turn_count + 1, user=tag), expected_seq=record.next_seq)
            return retries
        except ConflictError as exc:
            if exc.code != "seq_conflict":
                raise
    raise AssertionError(f"{tag}: no free head after 1000 tries")


async def _write(url: str, schema: str | None, writer: int, barrier: Barrier) -> int:
    store = await _open(url, schema)
    retries = 0
    try:
        barrier.wait(timeout=60)  # all writers start together, after the slow part (spawning, importing)
        for i in range(APPENDS):
            if writer % 2:
                retries += await _append_turn(store, f"{writer}-{i}")
            else:
                await store.append(SID, [make_event("memory/put", {"content": f"{writer}-{i}"})])
    finally:
        await store.close()
    return retries


def _writer_process(url: str, schema: str | None, writer: int, barrier: Barrier, results: Any) -> None:
    try:
        results.put((writer, asyncio.run(_write(url, schema, writer, barrier)), None))
    except BaseException:
        results.put((writer, None, traceback.format_exc()))


def _run_writers(url: str, schema: str | None) -> dict[int, int]:
    """Spawn the writers, wait for all of them; returns each writer's retries or fails with its traceback."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(WRITERS), context.Queue()
    processes = [
        context.Process(target=_writer_process, args=(url, schema, n, barrier, results), daemon=True)
        for n in range(WRITERS)
    ]
    for process in processes:
        process.start()
    try:
        reports = _collect(processes, results)
    finally:
        for process in processes:
            process.join(timeout=10)
            process.kill()
    failures = [f"writer {writer}:\n{error}" for writer, (_, error) in reports.items() if error]
    assert not failures, "\n".join(failures)
    return {writer: retries for writer, (retries, _) in reports.items()}


def _collect(processes: list[Any], results: Any) -> dict[int, tuple[int, str | None]]:
    """Every writer's report; fails at once if one dies without reporting, or after a minute."""
    reports: dict[int, tuple[int, str | None]] = {}
    deadline = time.monotonic() + 60
    while len(reports) < len(processes):
        try:
            writer, retries, error = results.get(timeout=0.2)
            reports[writer] = (retries, error)
        except queue.Empty:
            crashed = {n: p.exitcode for n, p in enumerate(processes) if p.exitcode and n not in reports}
            assert not crashed, f"writers died without reporting (exit codes {crashed})"
            assert time.monotonic() < deadline, f"writers {sorted(set(range(WRITERS)) - set(reports))} hang"
    return reports


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str | None]:
    """``(url, schema)`` of a store several processes can open."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}", None
    return request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")


async def test_processes_appending_to_one_session_lose_nothing(shared: tuple[str, str | None]) -> None:
    """Every append of every process lands exactly once, seqs contiguous, state agreeing with the log."""
    url, schema = shared
    store = await _open(url, schema)
    try:
        await store.create_session(session_id=SID, events=[make_event("session/created", {"label": "shared"})])
        retries = await asyncio.to_thread(_run_writers, url, schema)
        events = await store.read_events(SID)
        record = await store.get_session(SID)
    finally:
        await store.close()
    expected_tags = Counter(f"{w}-{i}" for w in range(WRITERS) for i in range(APPENDS))
    kinds = {"memory/put": "content", "user/message": "content"}
    assert Counter(e.data[kinds[e.type]] for e in events if e.type in kinds) == expected_tags
    turns = WRITERS // 2 * APPENDS
    assert [e.seq for e in events] == list(range(1 + WRITERS // 2 * APPENDS + turns * 6))
    check_log(events)
    puts = [e.data["content"] for e in events if e.type == "memory/put"]
    started = sum(e.type == "turn/start" for e in events)
    assert (record.next_seq, record.turn_count, record.slots.memory) == (len(events), started, puts[-1])
    assert started == turns
    assert set(retries) == set(range(WRITERS))
