"""Scheduled reflection: once per interval across the workers sharing a store, and a failure is an event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stellate import Agent
from stellate.agent import Reflector
from stellate.errors import ProviderError
from stellate.llm.scripted import FunctionLLM, ScriptedLLM
from stellate.llm.types import LLMRequest
from stellate.server.reflection_schedule import reflect_if_due
from stellate.store.sqlite import SqliteStore


def counting_reflector(calls: list[str], name: str) -> Reflector:
    def answer(request: LLMRequest) -> str:
        calls.append(name)
        return json.dumps({"synthesis": "fine", "insights": []})

    return Reflector(FunctionLLM(answer))


async def test_two_workers_on_one_store_reflect_once_per_interval(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    calls: list[str] = []
    stores = [await SqliteStore.open(url), await SqliteStore.open(url)]
    agents = [
        Agent(store, llm=ScriptedLLM(default="ok"), reflector=counting_reflector(calls, f"worker-{n}"))
        for n, store in enumerate(stores)
    ]
    try:
        await agents[0].create_session(label="branch")
        ran = [await reflect_if_due(agent, 60) for agent in agents]
        assert ran == [True, False] and calls == ["worker-0"], "the second worker found the interval claimed"
        other_space = Agent(stores[1].in_space("team-b"), llm=ScriptedLLM(default="ok"), reflector=agents[1].reflector)
        assert await reflect_if_due(other_space, 60), "each space has its own interval"
    finally:
        for agent in agents:
            await agent.close()
        for store in stores:
            await store.close()


async def test_a_failed_scheduled_reflection_is_published_and_the_schedule_goes_on(tmp_path: Path) -> None:
    def refuse(request: LLMRequest) -> str:
        raise ProviderError("model down", provider="scripted")

    agent = Agent("memory://", llm=ScriptedLLM(default="ok"), reflector=Reflector(FunctionLLM(refuse)))
    seen: list[object] = []
    agent.add_hook(seen.append, types=["error"])
    try:
        assert await reflect_if_due(agent, 0.5), "it ran (and failed) without raising"
        [event] = seen
        assert (getattr(event, "source", None), getattr(event, "code", None)) == ("reflector", "provider_error")
        with pytest.raises(ProviderError):
            await agent.reflect()  # asked directly, the failure is raised to the caller as well
        assert len(seen) == 2
    finally:
        await agent.close()


async def test_an_agent_without_a_reflector_is_skipped() -> None:
    agent = Agent("memory://", llm=ScriptedLLM(default="ok"))
    try:
        assert not await reflect_if_due(agent, 1)
    finally:
        await agent.close()
