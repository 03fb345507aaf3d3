"""Tools that need approval: the turn pauses in the log, a decision resumes the same turn's tool loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, Approval, ToolContext, tool
from stellate.engine.events import AgentEvent, ApprovalDecided, ApprovalRequested, TurnFinished
from stellate.errors import ArchivedError, ConflictError, NotFoundError, UsageError
from stellate.llm.scripted import FunctionLLM, Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import check_log, derive_transcript
from stellate.log.messages import ToolMessage
from stellate.store import SessionId

RAN: list[dict[str, Any]] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    RAN.append({"path": path})
    return f"deleted {path}"


@tool
def look(path: str) -> str:
    """Look at a file (needs no approval).

    Args:
        path: The file.
    """
    return f"looked at {path}"


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    RAN.clear()


def script(*calls: Any, final: str = "done") -> ScriptedLLM:
    return ScriptedLLM([Reply(tool_calls=list(calls)), final])


def agent_on(path: Path, llm: ScriptedLLM, **approvals: Approval | bool) -> Agent:
    return Agent(f"sqlite:///{path}", llm=llm, tools=[delete_file, look], approvals=approvals)


def tool_results(request: LLMRequest) -> dict[str, tuple[str, bool]]:
    return {m.call_id: (m.content, m.is_error) for m in request.messages if isinstance(m, ToolMessage)}


async def events_of(agent: Agent, sid: str) -> list[Any]:
    return await (await agent.store()).read_events(SessionId(sid))


async def test_a_call_needing_approval_pauses_the_turn_and_runs_nothing(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        result = await agent.turn(sid, "delete a.txt")
        assert result.reason == "awaiting_approval" and RAN == []
        [pending] = await agent.pending_approvals(sid)
        assert (pending.call_id, pending.name, json.loads(pending.arguments)) == (
            "c1",
            "delete_file",
            {"path": "a.txt"},
        )
        record = await (await agent.store()).get_session(SessionId(sid))
        assert record.cursor.paused and record.cursor.turn_open and record.lease is None
        assert (await agent.get_session_digest(sid)).awaiting_approval == 1
        with pytest.raises(ConflictError) as refused:
            await agent.turn(sid, "hello?")
        assert refused.value.code == "approval_pending"
        check_log(await events_of(agent, sid))


async def test_approving_resumes_the_same_turn_and_the_model_reads_the_result(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"), final="deleted it")
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        paused = await agent.turn(sid, "delete a.txt")
        result = await agent.approve(sid, "c1")
        assert result is not None
        assert (result.turn, result.reason, result.content) == (paused.turn, "completed", "deleted it")
        assert RAN == [{"path": "a.txt"}]
        assert tool_results(llm.requests[-1]) == {"c1": ("deleted a.txt", False)}
        log = await events_of(agent, sid)
        assert [e.type for e in log].count("turn/start") == 1
        assert check_log(log).paused is False


async def test_edited_arguments_are_what_the_tool_runs_with(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "/etc/passwd"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "clean up")
        await agent.approve(sid, "c1", arguments=json.dumps({"path": "tmp.txt"}))
        assert RAN == [{"path": "tmp.txt"}]
        calls = [e.data for e in await events_of(agent, sid) if e.type == "tool/call"]
        assert calls == [{"call_id": "c1", "name": "delete_file", "arguments": '{"path": "tmp.txt"}'}]
        assert tool_results(llm.requests[-1]) == {"c1": ("deleted tmp.txt", False)}


async def test_a_denial_is_the_result_the_model_reads_with_its_reason(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"), final="ok, I won't")
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "delete a.txt")
        result = await agent.deny(sid, "c1", reason="keep it")
        assert result is not None and result.content == "ok, I won't" and RAN == []
        text = "The user denied this call of delete_file; it was not run. Their reason: keep it"
        assert tool_results(llm.requests[-1]) == {"c1": (text, True)}


async def test_a_passed_deadline_decides_as_the_tool_says_on_next_access(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"), final="timed out")
    async with agent_on(tmp_path / "s.db", llm, delete_file=Approval(timeout=0, on_timeout="deny")) as agent:
        sid = (await agent.create_session(label="t")).id
        assert (await agent.turn(sid, "delete a.txt")).reason == "awaiting_approval"
        assert await agent.pending_approvals(sid) == []  # the access decided it and resumed the turn
        text = "No one approved this call of delete_file before its deadline; it was not run."
        assert tool_results(llm.requests[-1]) == {"c1": (text, True)}
        [decided] = [e.data for e in await events_of(agent, sid) if e.type == "tool/approval_decided"]
        assert (decided["decision"], decided["by"]) == ("denied", "deadline")


async def test_a_deadline_that_approves_runs_the_call(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=Approval(timeout=0, on_timeout="approve")) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "delete a.txt")
        assert await agent.expire_approvals() == 1
        assert RAN == [{"path": "a.txt"}]


async def test_a_predicate_asks_only_for_the_calls_it_picks(tmp_path: Path) -> None:
    risky = Approval(when=lambda args: args["path"].startswith("/"))
    llm = ScriptedLLM(
        [
            Reply(tool_calls=[tool_call("delete_file", {"path": "tmp.txt"}, id="c1")]),
            "first done",
            Reply(tool_calls=[tool_call("delete_file", {"path": "/etc/hosts"}, id="c2")]),
        ]
    )
    async with agent_on(tmp_path / "s.db", llm, delete_file=risky) as agent:
        sid = (await agent.create_session(label="t")).id
        assert (await agent.turn(sid, "one")).reason == "completed"
        assert (await agent.turn(sid, "two")).reason == "awaiting_approval"
        assert RAN == [{"path": "tmp.txt"}]


async def test_a_step_waits_whole_and_runs_its_other_calls_after_the_decisions(tmp_path: Path) -> None:
    calls = [
        tool_call("look", {"path": "x"}, id="c1"),
        tool_call("delete_file", {"path": "a"}, id="c2"),
        tool_call("delete_file", {"path": "b"}, id="c3"),
    ]
    llm = script(*calls)
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        assert [p.call_id for p in await agent.pending_approvals(sid)] == ["c2", "c3"]
        assert await agent.approve(sid, "c3") is None  # c2 still waits: nothing runs
        assert RAN == [] and [p.call_id for p in await agent.pending_approvals(sid)] == ["c2"]
        result = await agent.deny(sid, "c2")
        assert result is not None and result.reason == "completed"
        results = tool_results(llm.requests[-1])
        assert results["c1"] == ("looked at x", False) and results["c3"] == ("deleted b", False)
        assert results["c2"] == ("The user denied this call of delete_file; it was not run.", True)
        assert [e.data["call_id"] for e in await events_of(agent, sid) if e.type == "tool/result"] == ["c1", "c2", "c3"]


async def test_a_pause_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first_llm = script(tool_call("delete_file", {"path": "a.txt"}, id="c1"))
    async with agent_on(db, first_llm, delete_file=True) as first:
        sid = (await first.create_session(label="t")).id
        await first.turn(sid, "delete a.txt")
    later = ScriptedLLM(["after the restart"])
    async with agent_on(db, later, delete_file=True) as second:
        assert [p.call_id for p in await second.pending_approvals()] == ["c1"]
        result = await second.approve(sid, "c1")
        assert result is not None and result.content == "after the restart"
        assert tool_results(later.requests[0]) == {"c1": ("deleted a.txt", False)}


async def test_repair_leaves_a_paused_turn_alone(tmp_path: Path) -> None:
    async with agent_on(tmp_path / "s.db", script(tool_call("delete_file", {}, id="c1")), delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        store = await agent.store()
        assert await store.repair(SessionId(sid)) == []
        assert (await store.get_session(SessionId(sid))).cursor.paused


async def test_two_approvers_at_once_one_wins_the_other_gets_approval_decided(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        outcomes = await asyncio.gather(
            agent.approve(sid, "c1", by="ann"), agent.deny(sid, "c1", by="bob"), return_exceptions=True
        )
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], ConflictError) and errors[0].code == "approval_decided"
        assert len([e for e in await events_of(agent, sid) if e.type == "tool/approval_decided"]) == 1


async def test_unknown_calls_and_bad_edits_are_typed_errors(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        with pytest.raises(NotFoundError) as missing:
            await agent.approve(sid, "nope")
        assert missing.value.code == "approval_not_found"
        with pytest.raises(UsageError):
            await agent.approve(sid, "c1", arguments="[1, 2]")
        assert [p.call_id for p in await agent.pending_approvals(sid)] == ["c1"]


async def test_the_bus_tells_of_the_request_and_the_decision(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a"}, id="c1"))
    seen: list[AgentEvent] = []
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        agent.add_hook(seen.append)
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        await agent.approve(sid, "c1", arguments='{"path": "b"}', by="ann")
    [requested] = [e for e in seen if isinstance(e, ApprovalRequested)]
    [decided] = [e for e in seen if isinstance(e, ApprovalDecided)]
    assert requested.call.id == "c1" and (decided.by, decided.arguments) == ("ann", '{"path": "b"}')
    assert [e.result.reason for e in seen if isinstance(e, TurnFinished)] == ["awaiting_approval", "completed"]


async def test_a_fork_of_a_paused_session_cuts_at_its_last_completed_turn(tmp_path: Path) -> None:
    llm = ScriptedLLM(["first answer", Reply(tool_calls=[tool_call("delete_file", {"path": "a"}, id="c1")])])
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "first")
        await agent.turn(sid, "second")
        child = await agent.fork_session(sid, label="c", context="inherit")
        messages = await agent.list_messages(child.id)
        assert [m.content for m in messages] == ["first", "first answer"]
        assert derive_transcript(await events_of(agent, child.id)).messages == tuple(messages)


async def test_context_at_rebuilds_the_resumed_call_with_the_decided_results(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a"}, id="c1"), final="fine")
    async with agent_on(tmp_path / "s.db", llm, delete_file=True) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        await agent.deny(sid, "c1", reason="no")
        log = await events_of(agent, sid)
        last_reply = [e.seq for e in log if e.type == "assistant/message"][-1]
        session = await agent._session(sid)
        assert await session.context_at(last_reply) == list(llm.requests[-1].messages)


async def test_a_new_message_after_the_deadline_first_resumes_the_paused_turn(tmp_path: Path) -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("delete_file", {"path": "a"}, id="c1")]), "not done", "hello"])
    async with agent_on(tmp_path / "s.db", llm, delete_file=Approval(timeout=0)) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "delete a")
        result = await agent.turn(sid, "anything else?")
        assert (result.turn, result.content) == (2, "hello")
        ends = [e.data["reason"] for e in await events_of(agent, sid) if e.type == "turn/end"]
        assert ends == ["completed", "completed"] and RAN == []


async def test_the_decision_is_stored_before_the_tool_runs_whatever_the_durability(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    @tool
    async def audit(context: ToolContext) -> str:
        """Record what the store holds while the tool runs."""
        events = await (await context.agent.store()).read_events(SessionId(context.session_id))
        seen.append([e.type for e in events])
        return "audited"

    llm = script(tool_call("audit", {}, id="c1"))
    agent = Agent(
        f"sqlite:///{tmp_path / 's.db'}", llm=llm, tools=[audit], approvals={"audit": True}, durability="turn"
    )
    async with agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "audit")
        await agent.approve(sid, "c1")
    assert seen and seen[0][-1] == "tool/approval_decided"


async def test_a_turn_from_another_agent_resumes_a_pause_it_had_not_seen_once_its_deadline_passed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    rule = Approval(timeout=0)

    def answer(request: LLMRequest) -> str:
        last = request.messages[-1]
        return "the deadline denied it" if last.role == "tool" else f"about {last.content}"

    async with agent_on(db, FunctionLLM(answer), delete_file=rule) as here:
        sid = (await here.create_session(label="t")).id
        await here.turn(sid, "hi")  # this agent's copy of the session knows of no pause
        paused_llm = ScriptedLLM([Reply(tool_calls=[tool_call("delete_file", {"path": "a"}, id="c1")])])
        async with agent_on(db, paused_llm, delete_file=rule) as elsewhere:
            assert (await elsewhere.turn(sid, "delete a")).reason == "awaiting_approval"
        result = await here.turn(sid, "and now?")
        assert (result.turn, result.content) == (3, "about and now?")
        log = await events_of(here, sid)
        assert [e.data["reason"] for e in log if e.type == "turn/end"] == ["completed", "completed", "completed"]
        [decided] = [e.data for e in log if e.type == "tool/approval_decided"]
        assert decided["by"] == "deadline"


async def test_an_archived_paused_session_waits_no_more(tmp_path: Path) -> None:
    llm = script(tool_call("delete_file", {"path": "a"}, id="c1"))
    async with agent_on(tmp_path / "s.db", llm, delete_file=Approval(timeout=0)) as agent:
        sid = (await agent.create_session(label="t")).id
        await agent.turn(sid, "go")
        await agent.archive_session(sid)
        assert await agent.pending_approvals() == [] and await agent.pending_approvals(sid) == []
        assert await agent.expire_approvals() == 0
        with pytest.raises(ArchivedError):
            await agent.approve(sid, "c1")
        assert RAN == []
