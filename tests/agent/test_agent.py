from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, ForkOptions, ForkProfile, Reflector, SessionConfig, SplitGuard, tool
from stellate.engine.events import AgentEvent, ErrorRaised, ToolCallFinished, TurnFinished
from stellate.engine.skills import Skill, SkillSet
from stellate.errors import ArchivedError, ForkError, NotFoundError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import Message, check_log, derive_transcript
from stellate.store import SessionId
from stellate.store.memory import MemoryStore


@tool
async def slow_echo(text: str, delay: float = 0.0) -> str:
    """Echo text after a delay.

    Args:
        text: What to echo.
        delay: Seconds to wait.
    """
    await asyncio.sleep(delay)
    return f"echo:{text}"


@tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


@pytest.fixture
async def store() -> AsyncIterator[MemoryStore]:
    yield MemoryStore()


def make_agent(store: Any, llm: ScriptedLLM, **kw: Any) -> Agent:
    return Agent(store, llm=llm, **kw)


async def log_of(agent: Agent, sid: str) -> list[Any]:
    return await (await agent.store()).read_events(SessionId(sid))


# -- turns and tools -------------------------------------------------------------------------------


class Barrier:
    """Lets ``parties`` tasks through only together; a task left alone for 3 s gives up and reports it."""

    def __init__(self, parties: int) -> None:
        self.parties, self.arrived, self.all_here = parties, 0, asyncio.Event()

    async def meet(self) -> bool:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.all_here.set()
        try:
            await asyncio.wait_for(self.all_here.wait(), 3)
        except TimeoutError:
            return False
        return True


async def test_turn_runs_tools_concurrently_and_records_them_in_call_order(store: MemoryStore) -> None:
    barrier = Barrier(2)

    @tool
    async def meet(name: str, linger: float = 0.0) -> str:
        """Wait for the other call.

        Args:
            name: Who arrives.
            linger: Seconds to stay after meeting.
        """
        together = await barrier.meet()
        await asyncio.sleep(linger)
        return f"{name}:{'together' if together else 'alone'}"

    calls = [tool_call("meet", {"name": "a", "linger": 0.05}), tool_call("meet", {"name": "b"})]
    llm = ScriptedLLM([Reply(tool_calls=calls), "both done"])
    agent = make_agent(store, llm, tools=[meet])
    root = await agent.create_session(label="Root")
    result = await agent.turn(root.id, "go")
    assert (result.content, result.rounds, result.tool_calls, result.reason) == ("both done", 2, 2, "completed")
    events = await log_of(agent, root.id)
    check_log(events)
    results = [e.data for e in events if e.type == "tool/result"]
    assert [r["call_id"] for r in results] == [c.id for c in calls], "results are recorded in call order"
    assert [r["content"] for r in results] == ["a:together", "b:together"], "the calls ran at the same time"
    assert result.usage.input_tokens > 0


async def test_tool_mistakes_become_error_results_the_model_reads(store: MemoryStore) -> None:
    bad = [
        tool_call("explode"),
        tool_call("slow_echo", {"delay": "soon"}),
        tool_call("no_such_tool"),
        tool_call("slow_echo", '{"text": "trunc'),
    ]
    llm = ScriptedLLM([Reply(tool_calls=bad), "recovered"])
    agent = make_agent(store, llm, tools=[slow_echo, explode])
    root = await agent.create_session()
    result = await agent.turn(root.id, "try")
    assert result.content == "recovered"
    tool_messages = [m for m in llm.requests[1].messages if m.role == "tool"]
    assert all(m.is_error for m in tool_messages)  # type: ignore[union-attr]
    texts = [m.content for m in tool_messages]
    assert "kaboom" in texts[0] and "text" in texts[1] and "no_such_tool" in texts[2]


async def test_round_limit_stops_the_turn(store: MemoryStore) -> None:
    llm = ScriptedLLM(default=Reply(tool_calls=[tool_call("slow_echo", {"text": "x", "delay": 0})]))
    agent = make_agent(store, llm, tools=[slow_echo], max_rounds=3)
    root = await agent.create_session()
    result = await agent.turn(root.id, "loop forever")
    assert (result.reason, result.rounds, len(llm.requests)) == ("max_rounds", 3, 3)
    events = await log_of(agent, root.id)
    check_log(events)
    assert events[-1].data["reason"] == "max_rounds"


async def test_stream_yields_typed_events_in_order(store: MemoryStore) -> None:
    llm = ScriptedLLM(
        [Reply(text="let me check", tool_calls=[tool_call("slow_echo", {"text": "x", "delay": 0})]), "final answer"]
    )
    agent = make_agent(store, llm, tools=[slow_echo])
    root = await agent.create_session()
    kinds = [e.type async for e in agent.stream(root.id, "go")]
    assert kinds[0] == "message_received" and kinds[-1] == "turn_finished"
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("round_end")
    assert kinds.count("round_start") == 2 and "text" in kinds


async def test_cancelled_turn_leaves_a_valid_log(store: MemoryStore) -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("slow_echo", {"text": "x", "delay": 5})]), "next"])
    agent = make_agent(store, llm, tools=[slow_echo])
    root = await agent.create_session()
    task = asyncio.create_task(agent.turn(root.id, "go"))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await log_of(agent, root.id)
    check_log(events)
    assert events[-1].data["reason"] == "aborted"
    result = [e for e in events if e.type == "tool/result"][0]
    assert result.data["is_error"] and result.data["interrupted"] == "outcome_unknown"


# -- serialization ---------------------------------------------------------------------------------


async def test_turns_on_one_session_serialize_and_different_sessions_run_in_parallel(store: MemoryStore) -> None:
    barrier = Barrier(2)
    running: list[int] = []
    overlaps: list[int] = []

    async def answer(request: LLMRequest) -> str:
        if request.messages[-1].content in ("1", "2"):
            return "together" if await barrier.meet() else "alone"
        running.append(1)
        overlaps.append(len(running))
        await asyncio.sleep(0.05)
        running.pop()
        return "ok"

    agent = make_agent(store, ScriptedLLM(default=answer))
    a = await agent.create_session(label="A")
    b = await agent.create_session(label="B")
    first = await asyncio.gather(agent.turn(a.id, "1"), agent.turn(b.id, "2"))
    assert [r.content for r in first] == ["together", "together"], "different sessions run in parallel"
    await asyncio.gather(*(agent.turn(a.id, str(n)) for n in range(3, 7)))
    assert max(overlaps) == 1, "turns on one session never overlap"
    check_log(await log_of(agent, a.id))
    assert (await agent.get_session_digest(a.id)).turn_count == 5


# -- forks -----------------------------------------------------------------------------------------

PROFILES = {
    "poet": ForkProfile(system_prompt="Answer in verse.", system_prompt_mode="preset"),
    "region-expert": ForkProfile(
        system_prompt_fn=lambda v: f"Study-abroad expert for {v['region']}.",
        system_prompt_mode="preset",
        skills=["search"],
    ),
    "researcher": ForkProfile(system_prompt="Research assistant.", context="inherit"),
}


async def test_code_fork_applies_profile_and_persists_config(store: MemoryStore) -> None:
    llm = ScriptedLLM(default="ok")
    agent = make_agent(store, llm, profiles=PROFILES, defaults=SessionConfig(system_prompt="Default prompt"))
    root = await agent.create_session(label="Plan")
    await agent.turn(root.id, "I want to study abroad")
    child = await agent.fork_session(
        root.id, ForkOptions(label="NA", profile="region-expert", profile_vars={"region": "North America"})
    )
    assert child.parent_id == root.id
    record = await (await agent.store()).get_session(SessionId(child.id))
    assert record.slots.system_prompt == "Study-abroad expert for North America."
    assert record.slots.config["skills"] == ["search"] and record.slots.config["profile"] == "region-expert"
    researcher = await agent.fork_session(root.id, label="Dig", profile="researcher", system_prompt="Topic: visas.")
    assert [m.content for m in await agent.list_messages(researcher.id)] == ["I want to study abroad", "ok"]
    r_record = await (await agent.store()).get_session(SessionId(researcher.id))
    assert r_record.slots.system_prompt == "Research assistant.\n\nTopic: visas." and r_record.inherited > 0


async def test_topology_parent_is_separate_from_the_source(store: MemoryStore) -> None:
    llm = ScriptedLLM(default="ok")
    agent = make_agent(store, llm)
    root = await agent.create_session(label="Root")
    branch = await agent.fork_session(root.id, label="Branch")
    await agent.turn(branch.id, "branch talk")
    leaf = await agent.fork_session(branch.id, label="Leaf", context="inherit", topology_parent_id=root.id)
    record = await (await agent.store()).get_session(SessionId(leaf.id))
    assert (record.parent_id, record.source_id) == (root.id, branch.id)
    assert [m.content for m in await agent.list_messages(leaf.id)] == ["branch talk", "ok"]
    [tree] = await agent.get_topology()
    assert sorted(c.label for c in tree.children) == ["Branch", "Leaf"]
    node = await agent.get_node(branch.id)
    assert node.children == [] and node.parent_id == root.id


async def test_fork_errors_are_typed_and_change_nothing(store: MemoryStore) -> None:
    agent = make_agent(store, ScriptedLLM(default="ok"), profiles=PROFILES)
    root = await agent.create_session(label="Root")
    with pytest.raises(ForkError) as info:
        await agent.fork_session("ghost", label="x")
    assert info.value.code == "source_not_found"
    with pytest.raises(ForkError) as info:
        await agent.fork_session(root.id, label="x", profile="nope")
    assert info.value.code == "profile_not_found"
    assert f"(known: {', '.join(sorted(PROFILES))})" in info.value.message  # the agent's profiles, not none
    with pytest.raises(NotFoundError):
        await agent.fork_session(root.id, label="x", topology_parent_id="ghost")
    child = await agent.fork_session(root.id, label="c", session_id="fixed")
    with pytest.raises(ForkError) as info:
        await agent.fork_session(root.id, label="again", session_id=child.id)
    assert info.value.code == "child_exists"
    await agent.archive_session(root.id)
    with pytest.raises(ArchivedError):
        await agent.fork_session(root.id, label="late")
    assert len(await agent.list_session_digests()) == 2


async def test_fork_at_an_explicit_boundary_or_a_clicked_message(store: MemoryStore) -> None:
    agent = make_agent(store, ScriptedLLM(default="ok"))
    root = await agent.create_session()
    await agent.turn(root.id, "one")
    await agent.turn(root.id, "two")
    at_first = await agent.fork_session(root.id, label="b", context="inherit", boundary=7)
    assert [m.content for m in await agent.list_messages(at_first.id)] == ["one", "ok"]
    clicked = await agent.fork_session(root.id, label="a", context="inherit", at_seq=10)
    assert [m.content for m in await agent.list_messages(clicked.id)] == ["one", "ok", "two", "ok"]
    with pytest.raises(ForkError) as info:
        await agent.fork_session(root.id, label="bad", context="inherit", boundary=9)
    assert info.value.code == "open_turn"


async def test_split_guard_minimum_turns_and_cooldown(store: MemoryStore) -> None:
    agent = make_agent(store, ScriptedLLM(default="ok"), split_guard=SplitGuard(min_turns=2, cooldown_turns=2))
    root = await agent.create_session()
    await agent.turn(root.id, "1")
    with pytest.raises(ForkError) as info:
        await agent.fork_session(root.id, label="early")
    assert info.value.code == "split_rejected"
    await agent.turn(root.id, "2")
    await agent.fork_session(root.id, label="ok")
    with pytest.raises(ForkError):
        await agent.fork_session(root.id, label="too soon")
    await agent.turn(root.id, "3")
    await agent.turn(root.id, "4")
    await agent.fork_session(root.id, label="after cooldown")


async def test_compress_context_puts_a_summary_in_the_childs_prompt(store: MemoryStore) -> None:
    async def compress(messages: Sequence[Message]) -> str:
        return f"summary of {len(messages)}"

    agent = make_agent(store, ScriptedLLM(default="ok"), defaults=SessionConfig(compress_fn=compress))
    root = await agent.create_session()
    await agent.turn(root.id, "hello")
    child = await agent.fork_session(root.id, label="C", context="compress", system_prompt="Focus.")
    record = await (await agent.store()).get_session(SessionId(child.id))
    assert record.slots.system_prompt == "Focus.\n\n<parent_context>\nsummary of 2\n</parent_context>"
    assert await agent.list_messages(child.id) == []


# -- the model forking from inside its own turn ----------------------------------------------------


def create_call(**arguments: Any) -> Any:
    return tool_call("create_session", arguments)


@pytest.mark.parametrize("mode", ["turn", "stream"])
async def test_model_forks_from_inside_its_turn_without_deadlock(store: MemoryStore, mode: str) -> None:
    llm = ScriptedLLM(["first answer", Reply(tool_calls=[create_call(label="Budget", context="inherit")]), "forked it"])
    agent = make_agent(store, llm, builtin_tools=["create_session"])
    root = await agent.create_session(label="Root")
    await agent.turn(root.id, "first")

    async def run() -> None:
        if mode == "turn":
            await agent.turn(root.id, "split off the budget")
        else:
            [e async for e in agent.stream(root.id, "split off the budget")]

    await asyncio.wait_for(run(), timeout=5)
    digests = {d.label: d for d in await agent.list_session_digests()}
    assert digests["Budget"].parent_id == root.id
    assert [m.content for m in await agent.list_messages(digests["Budget"].id)] == ["first", "first answer"]
    result = [m for m in llm.requests[-1].messages if m.role == "tool"][0]
    assert "Created session" in result.content and not result.is_error  # type: ignore[union-attr]
    check_log(await log_of(agent, root.id))


async def test_create_session_schema_depends_on_profiles(store: MemoryStore) -> None:
    llm = ScriptedLLM(["a", "b"])
    plain = make_agent(store, llm, builtin_tools=["create_session"])
    root = await plain.create_session()
    await plain.turn(root.id, "x")
    [spec] = [t for t in llm.requests[0].tools if t.name == "create_session"]
    assert "profile" not in spec.parameters["properties"] and "vars" not in spec.parameters["properties"]
    with_profiles = make_agent(store, llm, builtin_tools=["create_session"], profiles=PROFILES)
    await with_profiles.turn(root.id, "y")
    [spec] = [t for t in llm.requests[1].tools if t.name == "create_session"]
    assert spec.parameters["properties"]["profile"]["enum"] == ["poet", "region-expert", "researcher"]
    assert spec.parameters["properties"]["vars"]["type"] == "object"


async def test_invalid_create_session_arguments_are_error_results(store: MemoryStore) -> None:
    bad = [create_call(), create_call(label="x", profile="ghost"), create_call(label="x", context="everything")]
    llm = ScriptedLLM([Reply(tool_calls=bad), "ok"])
    agent = make_agent(store, llm, builtin_tools=["create_session"], profiles=PROFILES)
    root = await agent.create_session()
    await agent.turn(root.id, "go")
    results = [m for m in llm.requests[1].messages if m.role == "tool"]
    assert all(r.is_error for r in results)  # type: ignore[union-attr]
    assert "label" in results[0].content and "ghost" in results[1].content and "context" in results[2].content
    assert len(await agent.list_session_digests()) == 1


# -- skills ----------------------------------------------------------------------------------------

SKILLS = SkillSet.from_skills(
    [
        Skill(name="search", description="Search well", content="SEARCH BODY", path=None),
        Skill(name="secret", description="Hidden", content="SECRET BODY", path=None),
    ]
)


async def test_activate_skill_serves_only_whitelisted_skills(store: MemoryStore) -> None:
    llm = ScriptedLLM(
        [
            "root ok",
            Reply(
                tool_calls=[
                    tool_call("activate_skill", {"name": "secret"}),
                    tool_call("activate_skill", {"name": "search"}),
                ]
            ),
            "done",
        ]
    )
    agent = make_agent(store, llm, skills=SKILLS, builtin_tools=["activate_skill"], profiles=PROFILES)
    root = await agent.create_session()
    await agent.turn(root.id, "hi")
    [spec] = [t for t in llm.requests[0].tools if t.name == "activate_skill"]
    assert spec.parameters["properties"]["name"]["enum"] == ["search", "secret"]
    child = await agent.fork_session(root.id, label="NA", profile="region-expert", profile_vars={"region": "NA"})
    await agent.turn(child.id, "use skills")
    [spec] = [t for t in llm.requests[1].tools if t.name == "activate_skill"]
    assert spec.parameters["properties"]["name"]["enum"] == ["search"] and "secret" not in spec.description
    results = [m for m in llm.requests[2].messages if m.role == "tool"]
    assert results[0].is_error and "SECRET" not in results[0].content  # type: ignore[union-attr]
    assert results[1].content == "SEARCH BODY"


# -- restart ---------------------------------------------------------------------------------------


async def test_child_keeps_its_named_model_and_tools_after_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    default_llm, special = ScriptedLLM(default="from default"), ScriptedLLM(default="from special")
    adapters = {"default": default_llm, "special": special}
    first = Agent(url, llm="default", adapters=adapters, tools=[slow_echo])
    root = await first.create_session()
    child = await first.fork_session(root.id, label="Special", llm="special", tools=["slow_echo"])
    await first.close()

    second = Agent(url, llm="default", adapters=adapters, tools=[slow_echo, explode])
    result = await second.turn(child.id, "who answers?")
    assert result.content == "from special"
    assert [t.name for t in special.requests[-1].tools] == ["slow_echo"]
    assert (await second.turn(root.id, "and here?")).content == "from default"
    await second.close()


# -- slots, consolidation, reflection, events ------------------------------------------------------


async def test_scheduled_consolidation_runs_in_background_every_n_turns(store: MemoryStore) -> None:
    done = asyncio.Event()
    seen: list[int] = []

    async def consolidate(memory: str | None, messages: Sequence[Message]) -> str:
        seen.append(len(messages))
        done.set()
        return f"memory after {len(messages)} messages"

    agent = make_agent(
        store, ScriptedLLM(default="ok"), defaults=SessionConfig(consolidate_fn=consolidate), consolidate_every=2
    )
    root = await agent.create_session()
    await agent.turn(root.id, "1")
    assert seen == []
    await agent.turn(root.id, "2")
    await asyncio.wait_for(done.wait(), 2)
    await agent.close()
    assert seen == [4]
    assert (await agent.get_session_digest(root.id)).memory == "memory after 4 messages"


async def test_failed_consolidation_is_an_event_not_an_exception(store: MemoryStore) -> None:
    async def broken(memory: str | None, messages: Sequence[Message]) -> str:
        raise RuntimeError("no memory today")

    errors: list[AgentEvent] = []
    agent = make_agent(
        store, ScriptedLLM(default="ok"), defaults=SessionConfig(consolidate_fn=broken), consolidate_every=1
    )
    agent.add_hook(errors.append, types=["error"])
    root = await agent.create_session()
    result = await agent.turn(root.id, "hi")
    assert result.content == "ok"
    await agent.close()
    assert len(errors) == 1 and isinstance(errors[0], ErrorRaised) and "no memory today" in errors[0].message


async def test_archive_consolidates_first_and_then_refuses_turns(store: MemoryStore) -> None:
    async def consolidate(memory: str | None, messages: Sequence[Message]) -> str:
        return "final memory"

    agent = make_agent(store, ScriptedLLM(default="ok"), defaults=SessionConfig(consolidate_fn=consolidate))
    root = await agent.create_session()
    await agent.turn(root.id, "hi")
    await agent.archive_session(root.id)
    digest = await agent.get_session_digest(root.id)
    assert (digest.status, digest.memory) == ("archived", "final memory")
    with pytest.raises(ArchivedError):
        await agent.turn(root.id, "more")


async def test_insight_reaches_only_the_next_call(store: MemoryStore) -> None:
    llm = ScriptedLLM(default="ok")
    agent = make_agent(store, llm)
    root = await agent.create_session()
    await agent.put_insight(root.id, "Tuition in NL is lower")
    await agent.turn(root.id, "q1")
    await agent.turn(root.id, "q2")
    assert any("Tuition" in m.content for m in llm.requests[0].messages)
    assert not any("Tuition" in m.content for m in llm.requests[1].messages)
    await agent.put_insight(root.id, "x")
    await agent.clear_insight(root.id)
    assert (await agent.get_session_digest(root.id)).insight is None


async def test_reflector_writes_insights_to_known_sessions_only(store: MemoryStore) -> None:
    answer = {
        "synthesis": "All fine.",
        "insights": [
            {"session_id": "PLACEHOLDER", "content": "Check visas"},
            {"session_id": "ghost", "content": "lost"},
        ],
    }

    def reply(request: LLMRequest) -> str:
        target = next(
            line.split("=")[1].split("]")[0] for line in request.messages[1].content.splitlines() if "Visa" in line
        )
        return json.dumps(answer).replace("PLACEHOLDER", target)

    reflector_llm = ScriptedLLM([reply])
    agent = make_agent(store, ScriptedLLM(default="ok"), reflector=Reflector(reflector_llm))
    root = await agent.create_session(label="Plan")
    visa = await agent.fork_session(root.id, label="Visa")
    await agent.put_memory(visa.id, "Researching student visas")
    reflection = await agent.reflect(synthesis_session_id=root.id)
    assert reflection.insights == {visa.id: "Check visas"} and reflection.dropped == ("ghost",)
    assert (await agent.get_session_digest(visa.id)).insight == "Check visas"
    assert (await agent.get_session_digest(root.id)).memory == "All fine."
    assert "Researching student visas" in reflector_llm.requests[0].messages[1].content


async def test_hooks_and_subscribers_see_the_same_events_and_a_broken_hook_is_reported(store: MemoryStore) -> None:
    agent = make_agent(store, ScriptedLLM(default="ok"))
    seen: list[str] = []
    agent.add_hook(lambda e: seen.append(e.type))

    def broken(event: AgentEvent) -> None:
        raise ValueError("bad hook")

    agent.add_hook(broken, types=["turn_finished"])
    stream = agent.subscribe(types=["session_created", "turn_finished"])
    received: list[AgentEvent] = []

    async def consume() -> None:
        async for event in stream:
            received.append(event)
            if isinstance(event, TurnFinished):
                return

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    root = await agent.create_session(label="R")
    await agent.turn(root.id, "hi")
    await asyncio.wait_for(consumer, 2)
    assert [e.type for e in received] == ["session_created", "turn_finished"]
    assert seen[:2] == ["session_created", "message_received"] and "error" in seen
    assert all(not isinstance(e, ToolCallFinished) for e in received)


async def test_sync_facade_works_inside_a_running_loop(tmp_path: Path) -> None:
    from stellate.sync import SyncAgent

    with SyncAgent(f"sqlite:///{tmp_path / 's.db'}", llm=ScriptedLLM(default="sync ok")) as agent:
        root = agent.create_session(label="Sync")
        assert agent.turn(root.id, "hi").content == "sync ok"
        kinds = [e.type for e in agent.stream(root.id, "again")]
        assert kinds[-1] == "turn_finished"
        assert [m.content for m in agent.list_messages(root.id)] == ["hi", "sync ok", "again", "sync ok"]
        assert derive_transcript([]).messages == ()
