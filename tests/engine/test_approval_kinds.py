"""Every kind of tool can need approval by its name: an MCP server's tool, a built-in, and through SyncAgent."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from stellate import Agent, Approval
from stellate.engine import needs_approval
from stellate.engine.mcp import MCPStdio
from stellate.errors import UsageError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.store.memory import MemoryStore
from stellate.sync import SyncAgent

MCP_SERVER = str(Path(__file__).with_name("mcp_server.py"))


async def test_an_mcp_tool_waits_for_approval_and_runs_on_the_server_after_it(
    require_extra: Callable[[str, str], ModuleType],
) -> None:
    require_extra("mcp", "mcp")
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("add", {"a": 2, "b": 3}, id="c1")]), "five"])
    servers = {"calc": MCPStdio(command=sys.executable, args=[MCP_SERVER])}
    async with Agent(MemoryStore(), llm=llm, mcp_servers=servers, approvals={"add": True}) as agent:
        sid = (await agent.create_session()).id
        assert (await agent.turn(sid, "2 + 3?")).reason == "awaiting_approval"
        result = await agent.approve(sid, "c1", arguments=json.dumps({"a": 40, "b": 2}))
    assert result is not None and result.content == "five"
    assert [m.content for m in llm.requests[-1].messages if m.role == "tool"] == ["42"]


async def test_the_create_session_built_in_waits_and_a_denial_creates_nothing() -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("create_session", {"label": "Side"}, id="c1")]), "ok"])
    agent = Agent(MemoryStore(), llm=llm, builtin_tools=["create_session"], approvals=needs_approval("create_session"))
    async with agent:
        sid = (await agent.create_session(label="Main")).id
        await agent.turn(sid, "branch off")
        assert [d.label for d in await agent.list_session_digests()] == ["Main"]
        await agent.deny(sid, "c1")
        assert [d.label for d in await agent.list_session_digests()] == ["Main"]
        [node] = await agent.get_topology()
        assert node.awaiting_approval == 0 and not node.children


def test_the_sync_facade_decides_like_the_agent() -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("create_session", {"label": "Side"}, id="c1")]), "branched"])
    with SyncAgent(
        MemoryStore(), llm=llm, builtin_tools=["create_session"], approvals={"create_session": Approval()}
    ) as agent:
        sid = agent.create_session(label="Main").id
        assert agent.turn(sid, "branch off").reason == "awaiting_approval"
        [pending] = agent.pending_approvals()
        result = agent.approve(sid, pending.call_id)
        assert result is not None and result.content == "branched"
        assert sorted(d.label for d in agent.list_session_digests()) == ["Main", "Side"]
        assert agent.expire_approvals() == 0


def test_approval_settings_are_checked() -> None:
    with pytest.raises(UsageError):
        Approval(timeout=-1)
    with pytest.raises(UsageError):
        Approval(on_timeout="maybe")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        Agent(MemoryStore(), approvals={"x": "yes"})  # type: ignore[dict-item]
