"""An Agent with nothing cached (a fresh process): forks read no history, first turns start from segments."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, SplitGuard
from stellate.errors import ForkError
from stellate.llm.scripted import ScriptedLLM
from stellate.store import BaseStore, SessionId
from stellate.store.sqlite import SqliteStore


@pytest.fixture(autouse=True)
def short_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stellate.session.history.SEGMENT_EVENTS", 12)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(str(tmp_path / "s.db"))
    yield s
    await s.close()


def llm() -> ScriptedLLM:
    return ScriptedLLM([f"reply {i}" for i in range(40)])


async def long_session(store: BaseStore, turns: int = 10) -> str:
    agent = Agent(store, llm=llm())
    digest = await agent.create_session(label="long")
    for i in range(turns):
        await agent.turn(digest.id, f"question {i}")
    return digest.id


def count_reads(store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    original = store.read_events

    async def spy(session_id: SessionId, **kw: Any) -> Any:
        calls.append((session_id, kw))
        return await original(session_id, **kw)

    monkeypatch.setattr(store, "read_events", spy)
    return calls


async def test_a_fork_from_a_cold_source_reads_none_of_its_log(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = await long_session(store)
    fresh = Agent(store, llm=llm())
    reads = count_reads(store, monkeypatch)
    child = await fresh.fork_session(sid, label="branch", context="inherit")
    assert reads == []
    assert (await fresh.turn(child.id, "and now?")).content.startswith("reply")
    source_messages = await Agent(store, llm=llm()).list_messages(sid)
    assert (await fresh.list_messages(child.id))[: len(source_messages)] == source_messages


async def test_a_cold_source_records_the_fork_and_stays_usable(store: BaseStore) -> None:
    sid = await long_session(store)
    fresh = Agent(store, llm=llm())
    child = await fresh.fork_session(sid, label="branch", context="inherit")
    events = await store.read_events(SessionId(sid), types=["session/forked"])
    assert [e.data["child_id"] for e in events] == [child.id]
    assert (await fresh.turn(sid, "still there?")).turn == 11


async def test_the_split_guard_still_sees_the_last_fork_of_a_cold_source(store: BaseStore) -> None:
    sid = await long_session(store)
    await Agent(store, llm=llm()).fork_session(sid, label="first", context="inherit")
    guarded = Agent(store, llm=llm(), split_guard=SplitGuard(min_turns=1, cooldown_turns=5))
    with pytest.raises(ForkError) as caught:
        await guarded.fork_session(sid, label="second", context="inherit")
    assert caught.value.code == "split_rejected"


async def test_a_selected_context_from_a_cold_source_reads_its_transcript(store: BaseStore) -> None:
    sid = await long_session(store, turns=3)
    fresh = Agent(store, llm=llm())
    child = await fresh.fork_session(sid, label="picked", context=lambda messages: messages[-2:])
    assert [m.content for m in await fresh.list_messages(child.id)] == ["question 2", "reply 2"]
