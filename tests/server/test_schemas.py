"""Two deployments in two schemas of one PostgreSQL database (`stellate serve --schema`): each its own world.

NOTIFY is per database, so the channels carry the schema (`stellate.store.pg_signals.channel_name`): neither
deployment hears the other's log signals or agent events, even for a session id both happen to use.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from serve_support import Worker, read_sse, start_worker

from stellate.log import make_event
from stellate.store import SessionId
from stellate.store.pg_signals import channel_name
from stellate.store.signals import LOG_CHANNEL, parse_log_payload
from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


def model(request: MockRequest) -> MockReply:
    return MockReply(text="fine thanks")


@pytest.fixture
def schemas(pg_url: str, pg_schema: str) -> Iterator[tuple[str, str]]:
    import psycopg
    from psycopg import sql

    other = f"stellate_test_{uuid.uuid4().hex[:12]}"
    yield pg_schema, other
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(other)))


@pytest.fixture
async def deployments(pg_url: str, schemas: tuple[str, str], tmp_path: Path) -> AsyncIterator[list[Worker]]:
    async with MockLLMServer(handler=model) as llm:
        started = [await start_worker(pg_url, llm.openai_base_url, tmp_path, "--schema", name) for name in schemas]
        try:
            yield started
        finally:
            for worker in started:
                worker.stop()


def test_channel_names_carry_the_schema() -> None:
    """Two schemas never share a channel name, however long their names (NOTIFY reaches the whole database)."""
    assert channel_name("a", LOG_CHANNEL) != channel_name("b", LOG_CHANNEL)
    long_a, long_b = "x" * 60 + "a", "x" * 60 + "b"
    assert channel_name(long_a, LOG_CHANNEL) != channel_name(long_b, LOG_CHANNEL)
    assert len(channel_name(long_a, LOG_CHANNEL).encode()) <= 63


async def test_two_deployments_in_two_schemas_see_only_their_own_events(
    deployments: list[Worker], pg_url: str, schemas: tuple[str, str]
) -> None:
    first, second = deployments
    async with httpx.AsyncClient(timeout=30) as client, contextlib.AsyncExitStack() as stack:
        info = (await client.get(f"{first.url}/v1/info")).json()
        assert f"(schema {schemas[0]})" in info["store"]
        seen: list[list[tuple[str, str | None, dict[str, object]]]] = [[], []]
        for worker, events in zip(deployments, seen, strict=True):
            response = await stack.enter_async_context(client.stream("GET", f"{worker.url}/v1/events"))
            stack.push_async_callback(_cancel, asyncio.create_task(read_sse(response, events)))
        await asyncio.sleep(0.3)
        for worker, label in ((second, "theirs"), (first, "mine")):  # the same session id in both
            created = await client.post(f"{worker.url}/v1/sessions", json={"label": label, "session_id": "same"})
            assert created.status_code == 201, created.text
        turn = await client.post(f"{second.url}/v1/sessions/same/turns?wait=true", json={"content": "hello?"})
        assert turn.status_code == 200
        await client.post(f"{first.url}/v1/sessions", json={"label": "mine too"})
        for _ in range(100):
            if len([e for e in seen[0] if e[0] == "session_created"]) == 2 and any(
                e[0] == "turn_finished" for e in seen[1]
            ):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        mine = (await client.get(f"{first.url}/v1/sessions")).json()["items"]
    assert [d.get("label") for n, _, d in seen[0] if n == "session_created"] == ["mine", "mine too"]
    assert {n for n, _, _ in seen[0]} == {"session_created"}, "nothing of the other deployment's turn"
    assert [d.get("label") for n, _, d in seen[1] if n == "session_created"] == ["theirs"]
    assert sorted(s["label"] for s in mine) == ["mine", "mine too"]


async def test_log_signals_stay_in_their_schema(pg_url: str, schemas: tuple[str, str]) -> None:
    """A store in one schema hears the appends of its own schema only, even to a session id both use."""
    from stellate.store.postgres import PostgresStore

    mine, theirs = [await PostgresStore.open(pg_url, schema=name) for name in schemas]
    try:
        created = [make_event("session/created", {"label": "same"})]
        for store in (mine, theirs):
            await store.create_session(session_id=SessionId("same"), events=created)
        with await mine.signals.subscribe([LOG_CHANNEL]) as signals:
            for _ in range(2):  # next seqs 4 and 7 there; 2 here
                await theirs.append(SessionId("same"), [make_event("memory/put", {"content": "theirs"})] * 3)
            await mine.append(SessionId("same"), [make_event("memory/put", {"content": "mine"})])
            _, payload = await asyncio.wait_for(signals.get(), 10)
        assert parse_log_payload(payload) == ("same", 2), "the first signal heard is this schema's own append"
    finally:
        await mine.close()
        await theirs.close()


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
