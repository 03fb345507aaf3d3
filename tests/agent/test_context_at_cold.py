"""A cold `context_at` (nothing cached) reads the record, the segments up to its step and the events after them.

It never reads the log past the step nor opens the session whole (issue 22, goal 6), and rebuilds what the
model was sent, from stored segments or without any.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent
from stellate.agent.inspection import context_at
from stellate.llm.scripted import ScriptedLLM
from stellate.store import SessionId
from stellate.store.sqlite import SqliteStore


@pytest.fixture(autouse=True)
def short_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stellate.session.history.SEGMENT_EVENTS", 12)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(str(tmp_path / "s.db"))
    yield s
    await s.close()


async def _long_session(store: SqliteStore, llm: ScriptedLLM, turns: int = 13) -> tuple[str, list[int]]:
    agent = Agent(store, llm=llm)
    digest = await agent.create_session(label="long", system_prompt="be brief")
    for i in range(turns):
        await agent.turn(digest.id, f"question {i}")
    replies = await store.read_events(SessionId(digest.id), types=("assistant/message",))
    return digest.id, [e.seq for e in replies]


def _rows_read(store: SqliteStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Seqs of every event row the store reads, whatever asks for it."""
    seqs: list[int] = []
    original = store._read_own

    async def spy(*args: Any, **kwargs: Any) -> Any:
        found = await original(*args, **kwargs)
        seqs.extend(e.seq for e in found)
        return found

    monkeypatch.setattr(store, "_read_own", spy)
    return seqs


async def test_a_cold_context_at_reads_no_event_past_its_step(
    store: SqliteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = ScriptedLLM([f"reply {i}" for i in range(20)])
    sid, replies = await _long_session(store, llm)
    for index in (0, len(replies) // 2, len(replies) - 1):
        fresh = Agent(store, llm=ScriptedLLM([]))
        seqs = _rows_read(store, monkeypatch)
        found = await context_at(fresh, sid, replies[index])
        assert [m.content for m in found.messages] == [m.content for m in llm.requests[index].messages]
        assert found.system_prompt == "be brief"
        assert seqs and max(seqs) == replies[index], seqs  # the step's own event is the last row read
        if index > 0:  # stored segments stood for the start of the log
            assert min(seqs) > 0, seqs
        assert fresh._sessions.cached(sid) is None  # the session was never opened
        monkeypatch.undo()
        monkeypatch.setattr("stellate.session.history.SEGMENT_EVENTS", 12)


async def test_a_cold_context_at_is_the_same_without_segments(store: SqliteStore) -> None:
    llm = ScriptedLLM([f"reply {i}" for i in range(20)])
    sid, replies = await _long_session(store, llm)
    with_segments = [await context_at(Agent(store, llm=ScriptedLLM([])), sid, seq) for seq in replies]
    with sqlite3.connect(store.path) as conn:
        conn.execute("DELETE FROM fold_segments")
    conn.close()
    without = [await context_at(Agent(store, llm=ScriptedLLM([])), sid, seq) for seq in replies]
    assert with_segments == without
    assert [c.messages for c in without] == [list(r.messages) for r in llm.requests]
    latest = await context_at(Agent(store, llm=ScriptedLLM([])), sid)
    assert latest.step == replies[-1]
