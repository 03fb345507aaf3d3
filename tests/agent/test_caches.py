"""Every per-session cache an agent or a store keeps stays bounded, however many sessions and forks (issue 22)."""

from __future__ import annotations

import asyncio

import pytest

from stellate import Agent, ForkOptions
from stellate.agent import _locks, sessions
from stellate.llm.scripted import ScriptedLLM
from stellate.store import base
from stellate.store.memory import MemoryStore


async def test_live_configs_stay_bounded_after_many_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "SESSION_CACHE_SIZE", 4)
    monkeypatch.setattr(sessions, "LIVE_CONFIG_CACHE_SIZE", 8)
    agent = Agent(MemoryStore(), llm=ScriptedLLM(default="ok"))
    root = await agent.create_session(label="root")
    await agent.turn(root.id, "hi")
    children = [await agent.fork_session(root.id, ForkOptions(label=f"c{i}", context="inherit")) for i in range(40)]
    cache = agent._sessions
    assert len(cache._sessions) <= 4 and len(cache._live) <= 8
    result = await agent.turn(children[0].id, "still works")  # forgotten: reopened from the store
    assert result.content == "ok"
    await agent.close()


async def test_a_config_its_frozen_form_gives_back_is_not_kept() -> None:
    agent = Agent(MemoryStore(), llm="scripted", adapters={"scripted": ScriptedLLM(default="ok")})
    root = await agent.create_session(label="root")
    await agent.turn(root.id, "hi")
    for i in range(10):
        await agent.fork_session(root.id, ForkOptions(label=f"c{i}", context="inherit"))
    assert len(agent._sessions._live) == 0
    await agent.close()


async def test_session_locks_are_forgotten_once_released() -> None:
    locks = _locks.SessionLocks()
    for i in range(100):
        async with locks.hold(f"s-{i}"):
            assert len(locks) == 1
    assert len(locks) == 0


async def test_a_lock_waited_for_is_kept_until_its_last_waiter_is_done() -> None:
    locks = _locks.KeyedLocks()
    order: list[str] = []

    async def hold(name: str) -> None:
        async with locks.hold("s"):
            order.append(name)
            await asyncio.sleep(0.01)

    await asyncio.gather(hold("a"), hold("b"), hold("c"))
    assert order == ["a", "b", "c"] and len(locks) == 0


async def test_agent_locks_stay_bounded_after_turns_on_many_sessions() -> None:
    agent = Agent(MemoryStore(), llm=ScriptedLLM(default="ok"))
    for i in range(30):
        digest = await agent.create_session(label=f"s{i}")
        await agent.turn(digest.id, "hi")
        await agent.consolidate_session(digest.id)
    assert len(agent._locks) == 0 and len(agent._consolidator._locks) == 0
    await agent.close()


async def test_a_stores_lineage_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_LINEAGE_CACHE_SIZE", 16)
    store = MemoryStore()
    records = [await store.create_session() for _ in range(50)]
    assert len(store._lineage) <= 16
    assert [len(await store.read_events(r.id)) for r in records[:3]] == [0, 0, 0]
