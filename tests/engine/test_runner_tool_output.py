"""Tool output that a store cannot keep (NUL, lone surrogates) is made storable and said so; the turn goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from stellate.engine.events import ToolCallFinished, TurnFinished
from stellate.engine.runner import TurnRunner
from stellate.engine.tools import ToolRegistry, tool
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.log import ToolMessage, check_log
from stellate.session import Session, SessionRuntime
from stellate.store.sqlite import SqliteStore


@tool
def read_blob(name: str) -> str:
    """Read a file as text.

    Args:
        name: Which file.
    """
    return {"nul": "head\x00tail", "surrogate": "head\udcfftail", "clean": "plain text"}[name]


@pytest.mark.parametrize("name", ["nul", "surrogate"])
async def test_unstorable_tool_output_is_replaced_and_noted_and_the_turn_completes(tmp_path: Path, name: str) -> None:
    store = await SqliteStore.open(str(tmp_path / "s.db"))
    try:
        call = tool_call("read_blob", {"name": name}, id="call-1")
        llm = ScriptedLLM([Reply(tool_calls=[call]), "The file says head/tail."])
        session = await Session.create(store, SessionRuntime(llm=llm))
        runner = TurnRunner(session, ToolRegistry([read_blob]))
        events = [e async for e in runner.run("read it")]
        finished = events[-1]
        assert isinstance(finished, TurnFinished) and finished.result.reason == "completed"
        log = await store.read_events(session.id)
        check_log(log)
        result = next(e for e in log if e.type == "tool/result")
        assert not result.data["is_error"] and "interrupted" not in result.data
        assert result.data["content"].startswith("head\ufffdtail")
        assert "could not be stored" in result.data["content"]  # the model is told
        assert result.data["replaced_characters"] == 1
        sent = [m for m in llm.requests[1].messages if isinstance(m, ToolMessage)]
        assert sent[0].content == result.data["content"]
        shown = next(e for e in events if isinstance(e, ToolCallFinished))
        assert shown.content == result.data["content"]
    finally:
        await store.close()


async def test_clean_tool_output_is_stored_unchanged(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "s.db"))
    try:
        call = tool_call("read_blob", {"name": "clean"}, id="call-1")
        session = await Session.create(store, SessionRuntime(llm=ScriptedLLM([Reply(tool_calls=[call]), "ok"])))
        _ = [e async for e in TurnRunner(session, ToolRegistry([read_blob])).run("read it")]
        result = next(e for e in await store.read_events(session.id) if e.type == "tool/result")
        assert result.data["content"] == "plain text" and "replaced_characters" not in result.data
    finally:
        await store.close()
