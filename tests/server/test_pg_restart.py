"""A real PostgreSQL restart under two `stellate serve` workers, during turns and streams.

The cluster is the test's own (`serve_support.throwaway_cluster`): it is restarted while turns run and log tails
and ``/v1/events`` streams are open, then stopped for longer than the pool waits, then started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_support import Cluster, Worker, read_sse, start_worker, throwaway_cluster

from stellate.errors import ERROR_CODES
from stellate.log import check_log
from stellate.store import SessionId
from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

SESSIONS = 3
Seen = list[tuple[str, str | None, dict[str, Any]]]


def typing_model(request: MockRequest) -> MockReply:
    return MockReply(text="a reply " + "word " * 6, chunk_delay=0.01, first_byte_delay=0.02)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as started:
        yield started


@pytest.fixture
async def workers(cluster: Cluster, tmp_path: Path) -> AsyncIterator[list[Worker]]:
    async with MockLLMServer(handler=typing_model) as model:
        started = [await start_worker(cluster.url, model.openai_base_url, tmp_path) for _ in range(2)]
        try:
            yield started
        finally:
            for worker in started:
                worker.stop()


class Turns:
    """Turns run one after another on each session, through alternating workers, whatever the database does."""

    def __init__(self, client: httpx.AsyncClient, workers: list[Worker], sessions: list[str]) -> None:
        self.client, self.workers, self.sessions = client, workers, sessions
        self.acknowledged: dict[str, list[int]] = {sid: [] for sid in sessions}
        self.refused: list[tuple[int, dict[str, Any]]] = []
        self.running = True

    async def keep_going(self, sid: str) -> None:
        n = 0
        while self.running:
            worker = self.workers[n % 2]
            n += 1
            try:
                response = await self.client.post(
                    f"{worker.url}/v1/sessions/{sid}/turns?wait=true", json={"content": f"turn {n}"}
                )
            except httpx.TransportError as exc:  # pragma: no cover - what the test exists to catch
                raise AssertionError(f"a worker dropped a request: {exc!r}") from exc
            if response.status_code == 200:
                self.acknowledged[sid].append(response.json()["turn"])
            else:
                self.refused.append((response.status_code, response.json()))
                await asyncio.sleep(0.2)


async def ready_status(client: httpx.AsyncClient, worker: Worker) -> int:
    return (await client.get(f"{worker.url}/v1/ready", timeout=30)).status_code


async def test_streams_and_turns_survive_a_postgresql_restart(cluster: Cluster, workers: list[Worker]) -> None:
    async with httpx.AsyncClient(timeout=60) as client, contextlib.AsyncExitStack() as streams:
        created = [await client.post(f"{workers[0].url}/v1/sessions", json={"label": f"s{n}"}) for n in range(SESSIONS)]
        sessions = [str(r.json()["id"]) for r in created]
        tails: dict[str, Seen] = {sid: [] for sid in sessions}
        spaces: list[Seen] = [[], []]
        readers = []
        for sid in sessions:
            response = await streams.enter_async_context(
                client.stream("GET", f"{workers[1].url}/v1/sessions/{sid}/events/stream")
            )
            readers.append(asyncio.create_task(read_sse(response, tails[sid])))
        for worker, seen in zip(workers, spaces, strict=True):
            response = await streams.enter_async_context(
                client.stream("GET", f"{worker.url}/v1/events", params={"types": "turn_finished"})
            )
            readers.append(asyncio.create_task(read_sse(response, seen)))
        turns = Turns(client, workers, sessions)
        runners = [asyncio.create_task(turns.keep_going(sid)) for sid in sessions]
        await asyncio.sleep(1.5)
        await asyncio.to_thread(cluster.restart)  # during turns and streams
        await asyncio.sleep(2.0)
        await asyncio.to_thread(cluster.stop)  # down for longer than the pool waits
        assert await ready_status(client, workers[0]) == 503
        await asyncio.to_thread(cluster.start)
        for _ in range(60):
            if await ready_status(client, workers[0]) == 200 and await ready_status(client, workers[1]) == 200:
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(1.0)  # turns go on after the outage
        turns.running = False
        await asyncio.gather(*runners)
        final = [
            await client.post(f"{workers[n % 2].url}/v1/sessions/{sid}/turns?wait=true", json={"content": "last"})
            for n, sid in enumerate(sessions)
        ]
        assert [r.status_code for r in final] == [200] * SESSIONS
        logs = await _logs(cluster.url, sessions)
        await _until_streams_have(tails, spaces, logs)
        assert not [r for r in readers if r.done()], "no stream ended"
        for reader in readers:
            reader.cancel()
    for status, problem in turns.refused:
        assert status == 503 and problem["code"] in ERROR_CODES, (status, problem)
    for sid in sessions:
        check_log(logs[sid])
        completed = {e.data["turn"] for e in logs[sid] if e.type == "turn/end" and e.data["reason"] == "completed"}
        assert set(turns.acknowledged[sid]) <= completed, "no acknowledged turn lost"
        assert [d["seq"] for _, _, d in tails[sid]] == [e.seq for e in logs[sid]], "the tail has the whole log"
        for seen in spaces:
            finished = {d["result"]["turn"] for _, _, d in seen if d["session_id"] == sid}
            assert finished == completed, "every finished turn reached /v1/events on both workers"
    assert sum(map(len, turns.acknowledged.values())) >= SESSIONS * 2


async def _logs(url: str, sessions: list[str]) -> dict[str, Any]:
    from stellate.store.postgres import PostgresStore

    store = await PostgresStore.open(url)
    try:
        return {sid: await store.read_events(SessionId(sid)) for sid in sessions}
    finally:
        await store.close()


async def _until_streams_have(tails: dict[str, Seen], spaces: list[Seen], logs: dict[str, Any]) -> None:
    def complete() -> bool:
        whole = all(len(tails[sid]) >= len(logs[sid]) for sid in tails)
        ends = sum(1 for events in logs.values() for e in events if e.type == "turn/end" and e.data["turn"] > 0)
        return whole and all(len(seen) >= ends for seen in spaces)

    for _ in range(200):
        if complete():
            return
        await asyncio.sleep(0.1)
