"""The Agent and the session lease inside one process: abandoned streams, busy sessions, archive."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

import pytest

from stellate import Agent, SessionConfig
from stellate.engine.events import RoundStart, TurnFinished
from stellate.errors import SessionBusyError, UsageError
from stellate.llm.scripted import Delay, FunctionLLM, ScriptedLLM
from stellate.llm.types import LLMRequest
from stellate.log import check_log
from stellate.log.events import Event
from stellate.store import SessionId
from stellate.store.memory import MemoryStore


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    yield MemoryStore()


def gated(reply: str) -> tuple[FunctionLLM, asyncio.Event]:
    """A model whose answer waits until the returned event is set."""
    gate = asyncio.Event()

    async def answer(request: LLMRequest) -> str:
        await gate.wait()
        return reply

    return FunctionLLM(answer), gate


async def leased(store: MemoryStore, sid: str) -> None:
    """Wait until a writer holds the session's lease with its turn open."""
    for _ in range(1000):
        record = await store.get_session(SessionId(sid))
        if record.lease is not None and record.cursor.turn_open:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no writer took the session")


def ends(events: list[Event]) -> list[tuple[int, str]]:
    return [(e.data["turn"], e.data["reason"]) for e in events if e.type == "turn/end"]


async def test_breaking_out_of_a_stream_aborts_the_turn_and_frees_the_session(store: MemoryStore) -> None:
    agent = Agent(store, llm=ScriptedLLM([Delay(seconds=30, then="never"), "second"]))
    sid = (await agent.create_session(label="s")).id
    async for event in agent.stream(sid, "first"):
        if isinstance(event, RoundStart):
            break
    gc.collect()  # the abandoned generator is finalized; its turn is aborted in the background
    result = await agent.turn(sid, "again")
    assert (result.turn, result.content) == (2, "second")
    events = await store.read_events(SessionId(sid))
    check_log(events)
    assert ends(events) == [(1, "aborted"), (2, "completed")]
    assert (await store.get_session(SessionId(sid))).lease is None


async def test_closing_a_stream_explicitly_releases_everything_at_once(store: MemoryStore) -> None:
    agent = Agent(store, llm=ScriptedLLM([Delay(seconds=30, then="never"), "next"]))
    sid = (await agent.create_session(label="s")).id
    stream = agent.stream(sid, "slow")
    async with contextlib.aclosing(stream):
        await anext(stream)  # MessageReceived: the turn is running
        await leased(store, sid)
    record = await store.get_session(SessionId(sid))
    assert record.lease is None and not record.cursor.turn_open
    assert ends(await store.read_events(SessionId(sid))) == [(1, "aborted")]
    assert (await agent.turn(sid, "next one")).content == "next"


async def test_a_turn_of_another_agent_waits_or_is_busy(store: MemoryStore) -> None:
    llm, gate = gated("first")
    slow = Agent(store, llm=llm)
    other = Agent(store, llm=ScriptedLLM(default="second"), busy_timeout=0)
    sid = (await slow.create_session(label="s")).id
    running = asyncio.create_task(slow.turn(sid, "one"))
    await leased(store, sid)
    with pytest.raises(SessionBusyError) as info:
        await other.turn(sid, "two")
    assert info.value.details["holder"] == slow.owner
    assert info.value.retry_after > 0
    waiting = asyncio.create_task(other.turn(sid, "two", busy_timeout=30))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    gate.set()
    waited = await waiting
    assert (await running).content == "first" and waited.turn == 2
    check_log(await store.read_events(SessionId(sid)))


async def test_archive_waits_for_a_running_turn_of_another_writer(store: MemoryStore) -> None:
    llm, gate = gated("done")
    writer = Agent(store, llm=llm)
    archiver = Agent(store, llm=ScriptedLLM(default="x"), consolidate_on_archive=False)
    sid = (await writer.create_session(label="s")).id
    running = asyncio.create_task(writer.turn(sid, "working"))
    await leased(store, sid)
    with pytest.raises(SessionBusyError):
        await archiver.archive_session(sid, busy_timeout=0)
    archiving = asyncio.create_task(archiver.archive_session(sid))
    gate.set()
    await archiving
    assert (await running).reason == "completed"
    assert (await archiver.get_session_digest(sid)).status == "archived"


async def test_memory_and_insight_land_while_another_writer_runs_a_turn(store: MemoryStore) -> None:
    llm, gate = gated("done")
    writer = Agent(store, llm=llm)
    other = Agent(store, llm=ScriptedLLM(default="x"))
    sid = (await writer.create_session(label="s")).id
    running = asyncio.create_task(writer.turn(sid, "working"))
    await leased(store, sid)
    await other.put_memory(sid, "noted")
    await other.put_insight(sid, "for later")
    gate.set()
    assert (await running).reason == "completed"
    events = await store.read_events(SessionId(sid))
    check_log(events)
    digest = await other.get_session_digest(sid)
    assert (digest.memory, digest.insight) == ("noted", "for later")


async def test_a_failed_turn_end_write_does_not_wedge_the_session(store: MemoryStore) -> None:
    agent = Agent(store, llm=ScriptedLLM(["ok", "fine"]))
    sid = (await agent.create_session(label="s")).id
    real_append = store.append
    calls = 0

    async def failing_append(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 2:  # the turn's closing batch (the first write was its opening)
            raise SessionBusyError("simulated", code="lease_lost")
        return await real_append(*args, **kwargs)  # type: ignore[arg-type]

    store.append = failing_append  # type: ignore[method-assign]
    with pytest.raises(SessionBusyError):
        await agent.turn(sid, "first")
    store.append = real_append  # type: ignore[method-assign]
    assert (await agent.turn(sid, "second")).content == "fine"
    assert ends(await store.read_events(SessionId(sid))) == [(1, "interrupted"), (2, "completed")]


async def test_lease_settings_are_checked(store: MemoryStore) -> None:
    with pytest.raises(UsageError):
        Agent(store, busy_timeout=-1)
    with pytest.raises(UsageError):
        Agent(store, lease_ttl=0)


async def test_finished_turns_release_the_lease(store: MemoryStore) -> None:
    agent = Agent(store, llm=ScriptedLLM(default="ok"))
    sid = (await agent.create_session(label="s")).id
    seen = [e async for e in agent.stream(sid, "hi")]
    assert isinstance(seen[-1], TurnFinished)
    assert (await store.get_session(SessionId(sid))).lease is None


async def test_scheduled_consolidation_runs_once_per_trigger_across_agents(tmp_path: object) -> None:
    from pathlib import Path

    from stellate.store.sqlite import SqliteStore

    store = await SqliteStore.open(f"sqlite:///{Path(str(tmp_path)) / 'shared.db'}")
    calls: list[int] = []

    async def slow_consolidate(memory: str | None, messages: object) -> str:
        calls.append(len(calls))
        await asyncio.sleep(0.2)
        return f"memory {len(calls)}"

    config = SessionConfig(consolidate_fn=slow_consolidate)
    agents = [Agent(store, llm=ScriptedLLM(default="ok"), defaults=config, consolidate_every=2) for _ in range(2)]
    sid = (await agents[0].create_session(label="s")).id
    for n in range(8):  # turns alternate between two agents that both schedule consolidations
        await agents[n % 2].turn(sid, f"turn {n}")
        await asyncio.sleep(0.05)
    for agent in agents:
        await agent.close()
    events = await store.read_events(SessionId(sid))
    consolidations = [e.data["turn"] for e in events if e.type == "memory/put"]
    assert consolidations == sorted(set(consolidations)), "no trigger consolidated twice"
    assert len(calls) == len(consolidations) and consolidations[-1] >= 6
    await store.close()


async def test_a_failed_turn_is_published_as_an_error_event(store: MemoryStore) -> None:
    from stellate.engine.events import ErrorRaised
    from stellate.errors import ProviderError

    agent = Agent(store, llm=ScriptedLLM([ProviderError("the provider is down", provider="scripted")]))
    sid = (await agent.create_session(label="s")).id
    seen: list[ErrorRaised] = []
    agent.add_hook(lambda event: seen.append(event) if isinstance(event, ErrorRaised) else None)
    with pytest.raises(ProviderError):
        await agent.turn(sid, "hello?")
    assert [(e.session_id, e.source, e.code) for e in seen] == [(sid, "turn", "provider_error")]
