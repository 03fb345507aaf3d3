"""Edit, regenerate, compare and replay through the `Agent` API (and its sync facade), on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, ForkProfile, tool
from stellate.agent.replay import ReplayTurn
from stellate.engine.events import TurnFinished
from stellate.errors import ArchivedError, UsageError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.log.events import make_event
from stellate.store import SessionId
from stellate.sync import SyncAgent


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"facts about {city}"


def echo_llm(prefix: str = "re") -> ScriptedLLM:
    return ScriptedLLM(default=Reply(text=f"{prefix}: ok"))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "branches.db"


@pytest.fixture
async def agent(db: Path) -> AsyncIterator[Agent]:
    async with Agent(f"sqlite:///{db}", llm=echo_llm(), tools=[lookup]) as agent:
        yield agent


async def three_turns(agent: Agent) -> str:
    root = await agent.create_session(label="Trip")
    for text in ("first", "second", "third"):
        await agent.turn(root.id, text)
    return root.id


def stored_rows(db: Path, session_id: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM events WHERE session_id = ?", (session_id,)).fetchone()[0])


async def test_edit_branches_before_the_turn_by_reference_and_leaves_the_source_alone(agent: Agent, db: Path) -> None:
    """The branch inherits the log up to just before turn 2 without copying it; the source's turns stay."""
    sid = await three_turns(agent)
    store = await agent.store()
    before = await store.read_events(SessionId(sid))
    branched = await agent.edit_turn(sid, 2, "second, but better")
    record = await store.get_session(SessionId(branched.session.id))
    start_2 = next(e.seq for e in before if e.type == "turn/start" and e.data["turn"] == 2)
    assert record.fork_seq == start_2 - 1 and record.inherited == start_2
    own_rows = stored_rows(db, record.id)
    assert own_rows == record.next_seq - record.inherited  # only its own events are stored: nothing copied
    assert [m.content for m in await agent.list_messages(record.id) if m.role == "user"] == [
        "first",
        "second, but better",
    ]
    assert branched.result.turn == 2 and branched.result.content == "re: ok"
    after = await store.read_events(SessionId(sid))
    assert after[: len(before)] == before  # nothing rewritten
    assert [e.type for e in after[len(before) :]] == ["session/forked"]
    assert (await agent.get_session_digest(sid)).turn_count == 3


async def test_an_edit_hangs_beside_its_source_under_the_same_parent(agent: Agent) -> None:
    """A child's edit is its sibling; a root's branch hangs from the root."""
    sid = await three_turns(agent)
    child = await agent.fork_session(sid, label="Child", context="inherit")
    await agent.turn(child.id, "fourth")
    edited = await agent.edit_turn(child.id, 4, "fourth, again")
    assert edited.session.parent_id == sid == child.parent_id
    from_root = await agent.edit_turn(sid, 1, "other first")
    assert from_root.session.parent_id == sid


async def test_the_edit_streams_its_turn_on_the_branch(agent: Agent) -> None:
    """Events arrive as the turn runs, all for the new branch, the last one `TurnFinished`."""
    sid = await three_turns(agent)
    events = [event async for event in agent.stream_edit_turn(sid, 3, "third?", label="Edited")]
    assert isinstance(events[-1], TurnFinished)
    branch_ids = {event.session_id for event in events}
    assert len(branch_ids) == 1 and sid not in branch_ids
    assert (await agent.get_session_digest(branch_ids.pop())).label == "Edited"


async def test_regenerate_runs_the_last_turn_again_with_its_own_message(db: Path) -> None:
    """Without a turn number the last turn runs again, in a branch, with the same user message."""
    llm = ScriptedLLM(["a1", "a2", "a2 again"])
    async with Agent(f"sqlite:///{db}", llm=llm) as agent:
        root = await agent.create_session(label="R")
        await agent.turn(root.id, "q1")
        await agent.turn(root.id, "q2")
        regenerated = await agent.regenerate_turn(root.id)
        assert regenerated.result.turn == 2 and regenerated.result.content == "a2 again"
        assert llm.requests[-1].messages[-1].content == "q2"
        assert regenerated.session.label == "R · regenerate 2"
        assert [m.content for m in await agent.list_messages(root.id)][-1] == "a2"


async def test_turns_that_do_not_exist_are_refused(agent: Agent) -> None:
    """Turn 0, a turn past the last and an empty edit are usage errors; a session with no turn has none to rerun."""
    sid = await three_turns(agent)
    for turn in (0, 4):
        with pytest.raises(UsageError, match="turns 1..3"):
            await agent.edit_turn(sid, turn, "x")
    with pytest.raises(UsageError):
        await agent.edit_turn(sid, 1, "  ")
    empty = await agent.create_session(label="Empty")
    with pytest.raises(UsageError, match="no turn"):
        await agent.regenerate_turn(empty.id)


def _called(turn: int, tokens: tuple[int | None, int | None], latency: int) -> Any:
    return make_event(
        "model/called",
        {
            "turn": turn,
            "step": 1,
            "provider": "p",
            "model": "m",
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "latency_ms": latency,
            "ttft_ms": None,
            "stop_reason": "stop",
        },
    )


def _turn(turn: int, user: str, reply: str, usage: tuple[int | None, int | None], latency: int) -> list[Any]:
    return [
        make_event("turn/start", {"turn": turn}),
        make_event("user/message", {"content": user}),
        make_event("step/start", {"turn": turn, "step": 1}),
        make_event("assistant/message", {"content": reply, "tool_calls": []}),
        _called(turn, usage, latency),
        make_event("step/end", {"turn": turn, "step": 1}),
        make_event("turn/end", {"turn": turn, "reason": "completed"}),
    ]


async def test_compare_folds_the_shared_prefix_and_aligns_the_turns_after_the_split(agent: Agent) -> None:
    """Two edits of turn 2: turn 1 shared, turn 2 on both sides, totals per side from their model calls."""
    store = await agent.store()
    source = await store.create_session(
        events=[
            make_event("session/created", {"label": "Logged"}),
            *_turn(1, "q1", "a1", (10, 5), 100),
            *_turn(2, "q2", "a2", (20, 7), 200),
            *_turn(3, "q3", "a3", (None, 3), 50),
        ]
    )
    edited = await agent.edit_turn(source.id, 2, "q2 edited")
    comparison = await agent.compare_sessions(source.id, edited.session.id)
    assert comparison.ancestor_id == source.id
    assert [view.turn for view in comparison.shared_turns] == [1]
    assert [row.turn for row in comparison.rows] == [2, 3]
    two, three = comparison.rows
    assert two.a is not None and two.b is not None and (two.a.user, two.b.user) == ("q2", "q2 edited")
    assert two.a.usage.input_tokens == 20 and three.b is None and three.tools_differ
    totals = comparison.a.totals
    assert (totals.calls, totals.input_tokens, totals.output_tokens, totals.latency_ms) == (2, None, 10, 250)
    own = await store.read_events(SessionId(edited.session.id), start=comparison.shared_through_seq + 1)
    assert comparison.b.totals.calls == sum(e.type == "model/called" for e in own)


async def test_compare_marks_differing_tool_calls_between_cousins(db: Path) -> None:
    """Two forks of one source compare from that source; a turn calling other tools is marked."""
    llm = ScriptedLLM(
        ["a1", Reply(tool_calls=[tool_call("lookup", {"city": "Delft"})]), "b1", "c1"], default=Reply(text="x")
    )
    async with Agent(f"sqlite:///{db}", llm=llm, tools=[lookup]) as agent:
        root = await agent.create_session(label="Root")
        await agent.turn(root.id, "hello")
        left = await agent.fork_session(root.id, label="L", context="inherit")
        right = await agent.fork_session(root.id, label="R", context="inherit")
        await agent.turn(left.id, "look it up")
        await agent.turn(right.id, "just answer")
        comparison = await agent.compare_sessions(left.id, right.id)
        assert comparison.ancestor_id == root.id
        [row] = comparison.rows
        assert row.tools_differ and row.a is not None and row.a.tool_calls[0].name == "lookup"
        same = await agent.compare_sessions(left.id, left.id)
        assert same.rows == [] and len(same.shared_turns) == 2
        stranger = await agent.create_session(label="Other")
        unrelated = await agent.compare_sessions(left.id, stranger.id)
        assert unrelated.ancestor_id is None and unrelated.shared_through_seq == -1
        fresh = await agent.fork_session(root.id, label="Fresh", context="none")
        await agent.turn(fresh.id, "new start")
        cousin = await agent.compare_sessions(left.id, fresh.id)
        assert cousin.ancestor_id == root.id and cousin.shared_through_seq == -1 and cousin.shared_turns == []
        assert [row.turn for row in cousin.rows] == [1, 2]


async def test_replay_reruns_the_user_messages_with_another_model_into_a_sibling(db: Path) -> None:
    """From turn 2 on, each user message runs again on a new branch with the named model, in order."""
    other = ScriptedLLM(default=Reply(text="other says hi"), model="other-model")
    async with Agent(f"sqlite:///{db}", llm=echo_llm(), adapters={"other": other}) as agent:
        sid = await three_turns(agent)
        events = [e async for e in agent.stream_replay(sid, from_turn=2, llm="other", system_prompt="Be brief")]
        progress = [e for e in events if isinstance(e, ReplayTurn)]
        assert [(p.index, p.total, p.source_turn, p.content) for p in progress] == [
            (1, 2, 2, "second"),
            (2, 2, 3, "third"),
        ]
        branch_id = progress[0].session_id
        assert [m.content for m in other.requests[-1].messages if m.role == "user"][-1] == "third"
        assert other.requests[-1].messages[0].content.startswith("Be brief")
        messages = [m.content for m in await agent.list_messages(branch_id)]
        assert messages[-4:] == ["second", "other says hi", "third", "other says hi"]
        assert (await agent.get_session_digest(branch_id)).label == "Trip · replay 2 (other, prompt)"
        finished = await agent.replay_session(sid, from_turn=3, llm="other")
        assert [r.turn for r in finished.results] == [3] and finished.session.parent_id == sid


def test_the_sync_facade_edits_regenerates_compares_and_replays(db: Path) -> None:
    """`SyncAgent` delegates every branching method."""
    with SyncAgent(f"sqlite:///{db}", llm=echo_llm()) as agent:
        root = agent.create_session(label="S")
        agent.turn(root.id, "one")
        edited = agent.edit_turn(root.id, 1, "uno")
        regenerated = agent.regenerate_turn(root.id)
        replayed = agent.replay_session(root.id, from_turn=1, label="Again")
        comparison = agent.compare_sessions(edited.session.id, regenerated.session.id)
        assert comparison.ancestor_id == root.id and [row.turn for row in comparison.rows] == [1]
        assert replayed.session.label == "Again" and len(replayed.results) == 1


async def test_an_inherited_turn_can_be_edited_and_an_archived_session_cannot(agent: Agent) -> None:
    """Turn numbers count inherited turns: editing a child's inherited turn 1 cuts the chain by reference."""
    sid = await three_turns(agent)
    child = await agent.fork_session(sid, label="Child", context="inherit")
    edited = await agent.edit_turn(child.id, 1, "first, again")
    record = await (await agent.store()).get_session(SessionId(edited.session.id))
    assert record.source_id == child.id and edited.session.parent_id == sid
    assert [m.content for m in await agent.list_messages(edited.session.id)] == ["first, again", "re: ok"]
    await agent.archive_session(child.id)
    with pytest.raises(ArchivedError):
        await agent.regenerate_turn(child.id)


async def test_replay_with_a_profile_takes_the_profiles_prompt(db: Path) -> None:
    """A profile given to a replay shapes the branch as it shapes any fork; the source's prompt is untouched."""
    llm = echo_llm()
    profiles = {"brief": ForkProfile(system_prompt="Answer in one line.", system_prompt_mode="preset")}
    async with Agent(f"sqlite:///{db}", llm=llm, profiles=profiles) as agent:
        root = await agent.create_session(label="P", system_prompt="Answer at length.")
        await agent.turn(root.id, "one")
        replayed = await agent.replay_session(root.id, from_turn=1, profile="brief")
        assert llm.requests[-1].messages[0].content == "Answer in one line."
        assert replayed.session.label == "P · replay 1 (brief)"
        record = await (await agent.store()).get_session(SessionId(root.id))
        assert record.slots.system_prompt == "Answer at length."
