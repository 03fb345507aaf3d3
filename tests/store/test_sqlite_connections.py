"""The SQLite store's two connections: short calls on the event loop's, and the store thread's when SQLite
cannot serve them at once (another connection holds the write lock) or they may take long."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from stellate.errors import ConflictError, StoreError
from stellate.log.events import make_event
from stellate.store.sqlite import MIGRATIONS, SqliteStore, Synchronous


async def _store_with_session(
    tmp_path: Path, *, busy_timeout_ms: int = 5000, synchronous: Synchronous = "NORMAL"
) -> tuple[SqliteStore, str]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = await SqliteStore.open(url, busy_timeout_ms=busy_timeout_ms, synchronous=synchronous)
    record = await store.create_session(events=[make_event("session/created", {"label": "a"})])
    return store, record.id


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])
async def test_a_write_waits_for_another_connections_lock_without_blocking_the_event_loop(
    tmp_path: Path, synchronous: Synchronous
) -> None:
    store, session_id = await _store_with_session(tmp_path, synchronous=synchronous)
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write in progress
    try:
        loop = asyncio.get_running_loop()
        append = asyncio.create_task(store.append(session_id, [make_event("label/set", {"label": "b"})]))
        ticks = [loop.time()]
        for _ in range(20):  # the loop keeps running while the append waits for the lock
            await asyncio.sleep(0.01)
            ticks.append(loop.time())
        assert not append.done()
        assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 1.0  # generous: a blocked loop stalls 3 s+
        # Reading needs no lock in WAL mode: the loop's connection serves it meanwhile.
        assert (await store.get_session(session_id)).slots.label == "a"
    finally:
        other.execute("COMMIT")
        other.close()
    written = await asyncio.wait_for(append, timeout=10)
    assert [e.type for e in written] == ["label/set"]
    assert (await store.get_session(session_id)).slots.label == "b"
    await store.close()


async def test_a_write_still_locked_after_the_busy_timeout_fails_as_locked_and_writes_nothing(tmp_path: Path) -> None:
    store, session_id = await _store_with_session(tmp_path, busy_timeout_ms=50)
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError) as caught:
            await store.append(session_id, [make_event("label/set", {"label": "b"})])
    finally:
        other.execute("COMMIT")
        other.close()
    assert caught.value.code == "store_locked"
    assert (await store.get_session(session_id)).next_seq == 1
    await store.close()


async def test_every_call_after_close_says_the_store_is_closed(tmp_path: Path) -> None:
    store, session_id = await _store_with_session(tmp_path)
    await store.close()
    for call in (
        store.get_session(session_id),
        store.read_events(session_id),
        store.append(session_id, [make_event("label/set", {"label": "b"})]),
    ):
        with pytest.raises(StoreError) as caught:
            await call
        assert caught.value.code == "store_closed"


async def test_the_store_thread_keeps_the_wal_from_growing_without_bound(tmp_path: Path) -> None:
    """Writes on the event loop's connection never checkpoint there; the store thread does it every so often."""
    store, session_id = await _store_with_session(tmp_path)
    for i in range(1500):
        await store.append(session_id, [make_event("memory/put", {"content": f"note {i} " + "x" * 200})])
    await store.read_events(session_id)  # a call through the store thread: queued behind any checkpoint
    wal = tmp_path / "store.db-wal"
    assert wal.stat().st_size < 8 * 1024 * 1024  # never copied back, 1,500 commits of 2-3 pages each: 16 MiB
    with sqlite3.connect(tmp_path / "store.db") as other:
        assert other.execute("SELECT count(*) FROM events").fetchone()[0] == 1501
    other.close()
    await store.close()


async def test_stores_opened_at_once_on_a_new_file_all_work(tmp_path: Path) -> None:
    """Creating and migrating races on the file's locks; every store still opens and sees the others' writes."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    stores = await asyncio.gather(*(SqliteStore.open(url) for _ in range(6)))
    try:
        for i, store in enumerate(stores):
            await store.create_session(events=[make_event("session/created", {"label": f"s{i}"})])
        assert sorted(r.slots.label for r in await stores[0].list_sessions()) == [f"s{i}" for i in range(6)]
        assert {await s.schema_version() for s in stores} == {len(MIGRATIONS)}
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_a_store_shared_with_another_threads_event_loop_serializes_its_calls(tmp_path: Path) -> None:
    """The loop's connection belongs to the thread that opened the store; another thread's calls queue on the
    store thread instead of interleaving transactions on one connection."""
    store, mine = await _store_with_session(tmp_path)
    theirs = (await store.create_session(events=[make_event("session/created", {"label": "b"})])).id

    async def write(session_id: str, count: int) -> None:
        for i in range(count):
            await store.append(session_id, [make_event("memory/put", {"content": f"m{i}"})])

    other_thread = asyncio.get_running_loop().run_in_executor(None, lambda: asyncio.run(write(theirs, 200)))
    await asyncio.gather(write(mine, 200), other_thread)
    assert [(await store.get_session(s)).next_seq for s in (mine, theirs)] == [201, 201]
    await store.close()


async def test_opening_a_file_another_process_is_still_creating_is_a_typed_error(tmp_path: Path) -> None:
    """The creator holds the write lock before the schema exists: the open waits, then says store_locked."""
    path = tmp_path / "new.db"
    creator = sqlite3.connect(path, isolation_level=None)
    creator.execute("PRAGMA journal_mode=WAL")  # as the creating store set it, before its migrations
    creator.execute("BEGIN IMMEDIATE")
    creator.execute("CREATE TABLE being_created (x INTEGER)")
    try:
        with pytest.raises(ConflictError) as info:
            await SqliteStore.open(str(path), busy_timeout_ms=100)
        assert info.value.code == "store_locked"
    finally:
        creator.execute("ROLLBACK")
        creator.close()
    store = await SqliteStore.open(str(path))  # once the creator is done, it opens
    await store.close()
