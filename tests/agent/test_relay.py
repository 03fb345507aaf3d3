"""Agent events across processes sharing a PostgreSQL store: another agent's turn, seen live, in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from stellate import Agent
from stellate.engine.events import AgentEvent, TextChunk, TurnFinished
from stellate.llm.scripted import ScriptedLLM
from stellate.store import BaseStore
from stellate.store.memory import MemoryStore

pytestmark = pytest.mark.postgres


@pytest.fixture
async def two_stores(pg_url: str, pg_schema: str) -> AsyncIterator[tuple[BaseStore, BaseStore]]:
    """Two stores on one schema: what two worker processes have."""
    from stellate.store.postgres import PostgresStore

    first = await PostgresStore.open(pg_url, schema=pg_schema)
    second = await PostgresStore.open(pg_url, schema=pg_schema)
    yield first, second
    await first.close()
    await second.close()


async def until_listening(watcher_events: list[AgentEvent], worker: Agent) -> None:
    """Make the worker create sessions until the watcher hears one: its listener is up from then on."""
    for _ in range(100):
        created = (await worker.create_session(label="ping")).id
        for _ in range(20):
            if any(getattr(e, "session_id", None) == created for e in watcher_events):
                return
            await asyncio.sleep(0.05)
    raise AssertionError("the watcher never heard the worker")


async def collect_until_finished(events: AsyncIterator[AgentEvent], into: list[AgentEvent]) -> None:
    async for event in events:
        into.append(event)
        if isinstance(event, TurnFinished):
            return


async def test_a_turn_on_another_worker_reaches_this_workers_subscribers(
    two_stores: tuple[BaseStore, BaseStore],
) -> None:
    watcher_store, worker_store = two_stores
    long_reply = "word " * 3000  # several notifications' worth of text
    watcher = Agent(watcher_store, llm=ScriptedLLM(default="unused"))
    worker = Agent(worker_store, llm=ScriptedLLM([long_reply]))
    sid = (await worker.create_session(label="shared")).id
    seen: list[AgentEvent] = []
    stream = watcher.subscribe()
    watching = asyncio.create_task(collect_until_finished(stream, seen))
    await until_listening(seen, worker)
    result = await worker.turn(sid, "talk a lot")
    await asyncio.wait_for(watching, 10)
    await stream.aclose()
    kinds = [e.type for e in seen if getattr(e, "session_id", None) == sid]
    assert kinds[0] == "message_received" and kinds[-1] == "turn_finished"
    assert "".join(e.text for e in seen if isinstance(e, TextChunk)) == long_reply == result.content
    await watcher.close()
    await worker.close()


async def test_an_agent_never_receives_its_own_events_twice(two_stores: tuple[BaseStore, BaseStore]) -> None:
    mine, theirs = two_stores
    agent = Agent(mine, llm=ScriptedLLM(default="ok"))
    other = Agent(theirs, llm=ScriptedLLM(default="ok"))
    sid = (await agent.create_session(label="mine")).id
    seen: list[AgentEvent] = []

    async def collect() -> None:
        async for event in agent.subscribe():
            seen.append(event)

    watching = asyncio.create_task(collect())
    await until_listening(seen, other)
    await agent.turn(sid, "hi")
    assert agent._relay is not None
    await agent._relay.close()  # flushed: its events are on the wire now
    later = (await other.create_session(label="later")).id
    for _ in range(200):  # notifications arrive in commit order: after this one, an echo would be here
        if any(getattr(e, "session_id", None) == later for e in seen):
            break
        await asyncio.sleep(0.05)
    watching.cancel()
    assert [e.type for e in seen if getattr(e, "session_id", None) == sid].count("turn_finished") == 1
    await agent.close()
    await other.close()


async def test_sharing_is_off_for_a_store_of_one_process() -> None:
    agent = Agent(MemoryStore(), llm=ScriptedLLM(default="ok"))
    assert agent._relay is None
