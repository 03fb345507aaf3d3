"""One writer per session across processes: real worker processes on one SQLite file or one PostgreSQL schema."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from stellate import Agent
from stellate.errors import SessionBusyError
from stellate.llm.scripted import ScriptedLLM
from stellate.log import check_log
from stellate.log.events import Event
from stellate.store import BaseStore, SessionId

WORKER = str(Path(__file__).with_name("lease_worker.py"))
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the processes meet: a SQLite file, or a throwaway PostgreSQL schema (``url#schema``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    return f"{request.getfixturevalue('pg_url')}#{request.getfixturevalue('pg_schema')}"


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[BaseStore]:
    sys.path.insert(0, str(Path(WORKER).parent))
    try:
        from lease_worker import open_for_test
    finally:
        sys.path.pop(0)
    opened = await open_for_test(store_url)
    yield opened
    await opened.close()


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def start(workers: list[subprocess.Popen[str]], *args: str, script: str = WORKER) -> subprocess.Popen[str]:
    """Run ``script`` (the lease worker by default) with ``args``; its folder joins the path, for its helpers."""
    path = os.pathsep.join(filter(None, [str(Path(script).parent), os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
    )
    workers.append(proc)
    return proc


async def read_line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout)
    if not line:
        raise AssertionError(f"worker exited ({proc.wait()}): {proc.stderr.read() if proc.stderr else ''}")
    return line.strip()


async def new_session(store: BaseStore) -> str:
    async with Agent(store, llm=ScriptedLLM(default="ok")) as agent:
        return (await agent.create_session(label="shared")).id


def turns_of(events: list[Event]) -> list[tuple[int, str]]:
    """(turn, reason) of every turn/end, after checking that no turn starts inside another."""
    check_log(events)
    return [(e.data["turn"], e.data["reason"]) for e in events if e.type == "turn/end"]


async def test_a_second_process_gets_session_busy_and_the_first_turn_completes(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    sid = await new_session(store)
    go = tmp_path / "go"
    holder = start(workers, store_url, sid, "hold", str(go), "30")
    assert await read_line(holder) == "IN-MODEL"
    before = await store.read_events(SessionId(sid))

    agent = Agent(store, llm=ScriptedLLM(default="second"))
    with pytest.raises(SessionBusyError) as info:
        await agent.turn(sid, "may I?", busy_timeout=0)
    assert info.value.code == "session_busy" and ":agent-" in info.value.details["holder"]
    assert await store.read_events(SessionId(sid)) == before, "a refused writer writes nothing"
    assert [m.content for m in await agent.list_messages(sid)] == ["question of the holder"], "readers see the turn"
    assert (await agent.get_session_digest(sid)).turn_open
    assert await store.read_events(SessionId(sid)) == before, "reading never repairs a live turn"

    go.touch()
    assert await read_line(holder) == "DONE completed"
    assert holder.wait(timeout=30) == 0
    await agent.turn(sid, "now?")
    assert turns_of(await store.read_events(SessionId(sid))) == [(1, "completed"), (2, "completed")]


async def test_a_waiting_turn_queues_behind_the_live_one(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    sid = await new_session(store)
    go = tmp_path / "go"
    holder = start(workers, store_url, sid, "hold", str(go), "30")
    assert await read_line(holder) == "IN-MODEL"
    agent = Agent(store, llm=ScriptedLLM(default="after you"))
    waiting = asyncio.create_task(agent.turn(sid, "queued", busy_timeout=30))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    go.touch()
    result = await waiting
    assert (result.turn, result.reason) == (2, "completed")
    assert holder.wait(timeout=30) == 0
    events = await store.read_events(SessionId(sid))
    assert turns_of(events) == [(1, "completed"), (2, "completed")]
    assert [e.data["content"] for e in events if e.type == "assistant/message"] == ["reply of the holder", "after you"]


async def test_many_processes_many_turns_never_overlap(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]]
) -> None:
    sessions = [await new_session(store) for _ in range(2)]
    per_worker, count = 8, 4
    procs = [start(workers, store_url, sessions[i % 2], "turns", str(per_worker)) for i in range(count)]
    for proc in procs:
        assert await read_line(proc, timeout=90) == f"DONE {per_worker}"
        assert proc.wait(timeout=30) == 0
    for sid in sessions:
        ends = turns_of(await store.read_events(SessionId(sid)))
        expected = per_worker * count // 2
        assert ends == [(n, "completed") for n in range(1, expected + 1)]


@pytest.mark.parametrize("ttl", ["1", "30"])
async def test_a_killed_holder_on_this_host_is_taken_over_at_once(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path, ttl: str
) -> None:
    """A holder whose process is gone is not waited for: its lease is broken, its turn repaired, nothing lost."""
    sid = await new_session(store)
    holder = start(workers, store_url, sid, "hold", str(tmp_path / "never"), ttl)
    assert await read_line(holder) == "IN-MODEL"
    os.kill(holder.pid, signal.SIGKILL)
    await asyncio.to_thread(holder.wait)
    before = await store.read_events(SessionId(sid))
    assert before[-1].type == "step/start", "the user's message was committed before the model call"
    assert (await store.get_session(SessionId(sid))).lease is not None, "the dead holder's lease is still on the row"

    # busy_timeout=0: a lease still judged live would fail at once with session_busy instead of waiting.
    result = await Agent(store, llm=ScriptedLLM(default="recovered")).turn(sid, "anyone there?", busy_timeout=0)
    events = await store.read_events(SessionId(sid))
    assert events[: len(before)] == before, "nothing committed before the kill is lost"
    assert turns_of(events) == [(1, "interrupted"), (2, "completed")]
    assert result.content == "recovered"


async def test_an_unreaped_dead_holder_is_taken_over_too(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """A killed holder its parent has not reaped yet (a zombie) is gone as well."""
    sid = await new_session(store)
    holder = start(workers, store_url, sid, "hold", str(tmp_path / "never"), "30")
    assert await read_line(holder) == "IN-MODEL"
    os.kill(holder.pid, signal.SIGKILL)
    while Path(f"/proc/{holder.pid}/stat").exists() and " Z " not in Path(f"/proc/{holder.pid}/stat").read_text():
        await asyncio.sleep(0.01)  # until the kernel has made it a zombie (the test never reaps it here)
    result = await Agent(store, llm=ScriptedLLM(default="recovered")).turn(sid, "still there?", busy_timeout=0)
    assert result.content == "recovered"


async def test_a_paused_holder_on_this_host_is_alive_and_waited_for(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    """A SIGSTOPped holder is a live process: its lease is never broken early (the ttl fences it, as before)."""
    sid = await new_session(store)
    go = tmp_path / "go"
    holder = start(workers, store_url, sid, "hold", str(go), "30")
    assert await read_line(holder) == "IN-MODEL"
    os.kill(holder.pid, signal.SIGSTOP)
    try:
        with pytest.raises(SessionBusyError) as info:
            await Agent(store, llm=ScriptedLLM(default="too early")).turn(sid, "may I?", busy_timeout=0.5)
        assert info.value.code == "session_busy"
    finally:
        go.touch()
        os.kill(holder.pid, signal.SIGCONT)
    assert await read_line(holder) == "DONE completed"
    assert turns_of(await store.read_events(SessionId(sid))) == [(1, "completed")]


async def test_a_paused_holder_whose_lease_was_taken_cannot_write(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    sid = await new_session(store)
    go = tmp_path / "go"
    holder = start(workers, store_url, sid, "hold", str(go), "1")
    assert await read_line(holder) == "IN-MODEL"
    os.kill(holder.pid, signal.SIGSTOP)  # a paused process: its lease is no longer renewed
    try:
        await Agent(store, llm=ScriptedLLM(default="took over")).turn(sid, "taking over", busy_timeout=20)
    finally:
        go.touch()
        os.kill(holder.pid, signal.SIGCONT)
    assert await read_line(holder) == "ERROR lease_lost"
    assert holder.wait(timeout=30) == 75
    events = await store.read_events(SessionId(sid))
    assert turns_of(events) == [(1, "interrupted"), (2, "completed")]
    replies = [e.data["content"] for e in events if e.type == "assistant/message"]
    assert replies == ["took over"], "the fenced-out holder's reply never lands"
