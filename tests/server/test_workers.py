"""Several `stellate serve` processes on one PostgreSQL: any worker serves any session, one writer per session.

Real processes on loopback ports, a real PostgreSQL schema of the test's own, and a loopback OpenAI-compatible
model that types its replies word by word.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_support import Worker, schema_url
from serve_support import start_worker as launch_worker

from stellate.log import check_log
from stellate.log.events import Event
from stellate.store import BaseStore, SessionId
from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

WORDS = 12


def typing_model(request: MockRequest) -> MockReply:
    """Answers every call after a short wait, one word at a time."""
    last = request.body["messages"][-1].get("content") or ""
    return MockReply(text=f"about {str(last)[:40]} " + "word " * WORDS, chunk_delay=0.01, first_byte_delay=0.05)


@pytest.fixture
async def model() -> AsyncIterator[MockLLMServer]:
    async with MockLLMServer(handler=typing_model) as server:
        yield server


@pytest.fixture
def db_url(pg_url: str, pg_schema: str) -> str:
    return schema_url(pg_url, pg_schema)


@pytest.fixture
def start_worker(db_url: str, model: MockLLMServer, tmp_path: Path) -> Iterator[Any]:
    started: list[Worker] = []

    async def start(*extra: str) -> Worker:
        worker = await launch_worker(db_url, model.openai_base_url, tmp_path, *extra)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[BaseStore]:
    from stellate.store.postgres import PostgresStore

    opened = await PostgresStore.open(db_url)
    yield opened
    await opened.close()


async def create_session(client: httpx.AsyncClient, worker: Worker, label: str) -> str:
    response = await client.post(f"{worker.url}/v1/sessions", json={"label": label})
    assert response.status_code in (200, 201), response.text
    return str(response.json()["id"])


async def run_turn(client: httpx.AsyncClient, worker: Worker, sid: str, text: str) -> dict[str, Any]:
    response = await client.post(f"{worker.url}/v1/sessions/{sid}/turns?wait=true", json={"content": text})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def turn_ends(events: list[Event]) -> list[tuple[int, str]]:
    check_log(events)  # among other rules: no turn starts inside another
    return [(e.data["turn"], e.data["reason"]) for e in events if e.type == "turn/end"]


async def test_turns_through_any_worker_never_overlap_and_lose_nothing(start_worker: Any, store: BaseStore) -> None:
    workers = [await start_worker(), await start_worker()]
    async with httpx.AsyncClient(timeout=90) as client:
        sessions = [await create_session(client, workers[0], f"s{n}") for n in range(2)]
        jobs = [run_turn(client, workers[n % 2], sessions[(n // 2) % 2], f"turn {n}") for n in range(12)]
        results = await asyncio.gather(*jobs)
    assert all(r["reason"] == "completed" for r in results)
    for sid in sessions:
        events = await store.read_events(SessionId(sid))
        assert [e.seq for e in events] == list(range(len(events))), "no seq gap or duplicate"
        assert turn_ends(events) == [(n, "completed") for n in range(1, 7)]


async def read_sse(response: httpx.Response, into: list[tuple[str, dict[str, Any]]], until: str) -> None:
    """Collect ``(event, data)`` pairs of a server-sent event stream until an event of type ``until``."""
    kind = ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            into.append((kind, json.loads(line.split(":", 1)[1])))
            if kind == until:
                return


async def test_a_client_of_one_worker_watches_a_turn_run_on_another(start_worker: Any, db_url: str) -> None:
    watcher, runner = await start_worker(), await start_worker()
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, runner, "watched")
        live: list[tuple[str, dict[str, Any]]] = []
        async with client.stream("GET", f"{watcher.url}/v1/events") as events:
            watching = asyncio.create_task(read_sse(events, live, until="turn_finished"))
            for _ in range(100):  # until the watcher's listener hears the runner
                await create_session(client, runner, "ping")
                await asyncio.sleep(0.1)
                if any(kind == "session_created" for kind, _ in live):
                    break
            result = await run_turn(client, runner, sid, "tell me")
            await asyncio.wait_for(watching, 30)
    mine = [(kind, data) for kind, data in live if data.get("session_id") == sid]
    kinds = [kind for kind, _ in mine]
    assert kinds[0] == "message_received" and kinds[-1] == "turn_finished"
    assert "".join(data["text"] for kind, data in mine if kind == "text") == result["content"]


async def test_a_log_tail_on_one_worker_misses_nothing_when_its_listener_drops(
    start_worker: Any, db_url: str, pg_url: str, pg_schema: str
) -> None:
    import psycopg

    watcher, runner = await start_worker(), await start_worker()
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, runner, "tailed")
        tail: list[tuple[str, dict[str, Any]]] = []
        async with client.stream("GET", f"{watcher.url}/v1/sessions/{sid}/events/stream") as stream:
            reading = asyncio.create_task(read_sse(stream, tail, until="never"))
            await run_turn(client, runner, sid, "first")
            with psycopg.connect(pg_url, autocommit=True) as conn:
                killed = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                    (f"stellate signals {pg_schema}",),
                ).fetchall()
            assert killed, "the watcher's listener was found"
            await run_turn(client, runner, sid, "second")
            for _ in range(100):
                if sum(1 for _, data in tail if data.get("type") == "turn/end") == 2:
                    break
                await asyncio.sleep(0.1)
            reading.cancel()
    seqs = [data["seq"] for _, data in tail]
    assert seqs == list(range(len(seqs))), "every event once, in order"
    assert [data["data"]["turn"] for _, data in tail if data["type"] == "turn/end"] == [1, 2]


async def test_a_worker_killed_mid_turn_is_repaired_and_another_goes_on(
    start_worker: Any, store: BaseStore, model: MockLLMServer
) -> None:
    doomed, survivor = await start_worker(), await start_worker()
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await create_session(client, doomed, "survives")
        await run_turn(client, doomed, sid, "before")
        stuck = asyncio.create_task(
            client.post(f"{doomed.url}/v1/sessions/{sid}/turns", json={"content": "the worker dies in this one"})
        )
        for _ in range(200):  # until the doomed worker is inside its model call
            if any("the worker dies" in json.dumps(r.body) for r in model.requests):
                break
            await asyncio.sleep(0.05)
        doomed.kill()
        with pytest.raises(httpx.TransportError):
            await stuck
        result = await run_turn(client, survivor, sid, "after")
    assert result["turn"] == 3 and result["reason"] == "completed"
    assert turn_ends(await store.read_events(SessionId(sid))) == [
        (1, "completed"),
        (2, "interrupted"),
        (3, "completed"),
    ]


async def test_consolidation_every_n_turns_runs_once_per_trigger_across_workers(
    start_worker: Any, store: BaseStore
) -> None:
    workers = [await start_worker("--consolidate-every", "2"), await start_worker("--consolidate-every", "2")]
    async with httpx.AsyncClient(timeout=90) as client:
        sid = await create_session(client, workers[0], "consolidated")
        for n in range(6):  # turns alternate between the workers
            await run_turn(client, workers[n % 2], sid, f"turn {n}")
        for _ in range(100):  # consolidations run in the background
            puts = [e for e in await store.read_events(SessionId(sid)) if e.type == "memory/put"]
            if puts and puts[-1].data.get("turn") == 6:
                break
            await asyncio.sleep(0.1)
    consolidated = [e.data["turn"] for e in puts]
    assert consolidated == sorted(set(consolidated)), "no trigger consolidated twice"
    assert consolidated[-1] == 6 and len(consolidated) <= 3
