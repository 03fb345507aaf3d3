"""`Agent.search` and its blocking twin: the store's search behind the facade, on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from stellate import Agent
from stellate.errors import UsageError
from stellate.llm import ScriptedLLM
from stellate.store.memory import MemoryStore
from stellate.sync import SyncAgent


async def test_agent_search_finds_a_turns_messages_and_a_forks_own_only(tmp_path: Path) -> None:
    async with Agent(f"sqlite:///{tmp_path / 'a.db'}", llm=ScriptedLLM(default="东京的语言学校不错")) as agent:
        root = await agent.create_session(label="留学")
        await agent.turn(root.id, "我想去日本留学")
        fork = await agent.fork_session(root.id, label="分支", context="inherit")
        await agent.turn(fork.id, "预算是多少？日本")
        page = await agent.search("日本")
        assert sorted((h.session_id, h.role, h.turn) for h in page.hits) == sorted(
            [(root.id, "user", 1), (fork.id, "user", 2)]
        )
        assert {h.session_id for h in (await agent.search("语言学校")).hits} == {root.id, fork.id}
        with pytest.raises(UsageError):
            await agent.search("  ")


def test_the_sync_facade_searches_too() -> None:
    with SyncAgent(MemoryStore(), llm=ScriptedLLM(default="noted")) as agent:
        root = agent.create_session(label="s")
        agent.turn(root.id, "remember the harbour")
        [hit] = agent.search("HARBOUR").hits
        assert (hit.session_id, hit.seq, hit.role) == (root.id, 2, "user")
        assert hit.snippet[hit.highlights[0][0] : hit.highlights[0][1]] == "harbour"
