"""Live sessions through `stellate serve`: turns over HTTP never fail beside slot writes and forks, and a running
session branches where asked, from this worker or another.

Real `stellate serve` processes on loopback; the slot writes come from other processes (this test's process,
through the store or another worker). A loopback OpenAI-compatible model answers; a message starting with
"slow" keeps its turn open for a while.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_workers import Worker, create_session, db_url, run_turn, start_worker, store

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.log import check_log
from stellate.log.events import Event
from stellate.store import BaseStore, SessionId
from stellate.store.sqlite import SqliteStore
from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest

__all__ = ["db_url", "start_worker", "store"]  # fixtures shared with the worker tests
pytestmark = pytest.mark.postgres  # the workers meet in a PostgreSQL schema (the SQLite case only borrows the launcher)

SECONDS = 8.0


def slow_when_asked(request: MockRequest) -> MockReply:
    last = str(request.body["messages"][-1].get("content") or "")
    delay = 2.0 if last.startswith("slow") else 0.0
    return MockReply(text=f"about {last[:30]}", first_byte_delay=delay)


@pytest.fixture
async def model() -> AsyncIterator[MockLLMServer]:
    """The workers' model (this module's, in place of the worker tests' typing one)."""
    async with MockLLMServer(handler=slow_when_asked) as server:
        yield server


async def _turns_for(client: httpx.AsyncClient, worker: Worker, sid: str, deadline: float) -> list[str]:
    """HTTP turns back to back until ``deadline``; the failures, as ``status code`` strings."""
    failures: list[str] = []
    n = 0
    while time.monotonic() < deadline:
        n += 1
        response = await client.post(f"{worker.url}/v1/sessions/{sid}/turns?wait=true", json={"content": f"q {n}"})
        if response.status_code != 200 or response.json()["reason"] != "completed":
            failures.append(f"{response.status_code} {response.text[:200]}")
    return failures


async def _check_log(store: BaseStore, sid: str) -> list[Event]:
    events = await store.read_events(SessionId(sid))
    check_log(events)
    assert {e.data["reason"] for e in events if e.type == "turn/end"} == {"completed"}
    return events


async def test_http_turns_beside_another_workers_slot_writes_and_forks(start_worker: Any, store: BaseStore) -> None:
    """PostgreSQL, two workers: A runs turns; memory, insights and forks go through B as fast as they come."""
    a, b = await start_worker(), await start_worker()
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, a, "live")
        deadline = time.monotonic() + SECONDS
        written: list[str] = []
        failures: list[str] = []
        forks = 0

        async def slots() -> None:
            nonlocal forks
            n = 0
            while time.monotonic() < deadline:
                n += 1
                text = f"memory {n}"
                for path, body in (("memory", text), ("insight", f"insight {n}")):
                    response = await client.put(f"{b.url}/v1/sessions/{sid}/{path}", json={"content": body})
                    if response.status_code != 200:
                        failures.append(f"{path} {response.status_code} {response.text[:200]}")
                written.append(text)
                if n % 5 == 0:
                    forks += 1
                    response = await client.post(f"{b.url}/v1/sessions/{sid}/forks", json={"label": f"f{n}"})
                    if response.status_code != 201:
                        failures.append(f"fork {response.status_code} {response.text[:200]}")

        turn_failures, _ = await asyncio.gather(_turns_for(client, a, sid, deadline), slots())
    assert turn_failures == [] and failures == []
    events = await _check_log(store, sid)
    turns = sum(e.type == "turn/end" for e in events)
    print(f"\npostgres via serve: {turns} turns, {2 * len(written)} slot writes, {forks} forks in {SECONDS:.0f} s")
    assert set(written) <= {e.data["content"] for e in events if e.type == "memory/put"}
    assert len(await store.list_sessions(parent_id=SessionId(sid))) == forks > 0


async def test_http_turns_on_sqlite_beside_another_process_writing_slots(
    tmp_path: Path, start_sqlite_worker: Any
) -> None:
    """SQLite, one worker: this test's process writes memory and forks through the file while HTTP turns run."""
    db = tmp_path / "live.db"
    worker = await start_sqlite_worker(db)
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, worker, "live")
        deadline = time.monotonic() + SECONDS
        store = await SqliteStore.open(f"sqlite:///{db}")
        agent = Agent(store, llm=ScriptedLLM(default="unused"), busy_timeout=0)
        written: list[str] = []

        async def slots() -> None:
            n = 0
            while time.monotonic() < deadline:
                n += 1
                await agent.put_memory(sid, f"memory {n}")
                written.append(f"memory {n}")
                if n % 5 == 0:
                    await agent.fork_session(sid, label=f"f{n}", context="inherit")
                await asyncio.sleep(0.005)

        try:
            turn_failures, _ = await asyncio.gather(_turns_for(client, worker, sid, deadline), slots())
            assert turn_failures == []
            events = await _check_log(store, sid)
            assert set(written) <= {e.data["content"] for e in events if e.type == "memory/put"}
        finally:
            await store.close()


@pytest.fixture
def start_sqlite_worker(start_worker: Any) -> Any:
    """`start_worker` on a SQLite file instead of the test's PostgreSQL schema."""

    async def start(db: Path) -> Worker:
        return await start_worker("--db", f"sqlite:///{db}")

    return start


async def test_a_fork_on_another_worker_cuts_a_running_session_at_its_completed_turn(
    start_worker: Any, store: BaseStore
) -> None:
    """Worker A runs a slow turn; worker B forks the session at once, anchored or not; the turn completes."""
    a, b = await start_worker(), await start_worker()
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, a, "running")
        first = await run_turn(client, a, sid, "one")
        running = asyncio.create_task(
            client.post(f"{a.url}/v1/sessions/{sid}/turns", json={"content": "slow " + "x" * 5})
        )
        while not (await client.get(f"{b.url}/v1/sessions/{sid}")).json()["open_turn"]:
            await asyncio.sleep(0.02)
        record = await store.get_session(SessionId(sid))
        end_of_first = record.cursor.last_end_seq
        anchored = await client.post(f"{b.url}/v1/sessions/{sid}/forks", json={"label": "x", "at_seq": 2})
        plain = await client.post(f"{b.url}/v1/sessions/{sid}/forks", json={"label": "y", "context": "inherit"})
        inside = await client.post(f"{b.url}/v1/sessions/{sid}/forks", json={"label": "z", "at_seq": end_of_first + 1})
        assert not running.done(), "the forks did not wait for the turn"
        assert (anchored.status_code, plain.status_code) == (201, 201), (anchored.text, plain.text)
        assert inside.status_code == 409 and inside.json()["code"] == "fork_unavailable"
        for child in (anchored.json(), plain.json()):
            assert (await client.get(f"{b.url}/v1/sessions/{child['id']}")).json()["fork_seq"] == end_of_first
        response = await running
        assert response.status_code == 200 and response.json()["reason"] == "completed", response.text
        assert first["reason"] == "completed"
    await _check_log(store, sid)
