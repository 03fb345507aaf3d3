"""A turn whose last write fails never wedges its session: the turn is closed, or the next turn closes it."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stellate.errors import ConflictError, LLMError, UsageError
from stellate.llm.scripted import FunctionLLM, Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import check_log, derive_transcript
from stellate.session import SendDone, Session, SessionRuntime
from stellate.session.types import Durability
from stellate.store import SessionId
from stellate.store.sqlite import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(str(tmp_path / "s.db"), busy_timeout_ms=50)
    yield s
    await s.close()


async def assert_in_step_with_store(session: Session) -> None:
    record = await session.store.get_session(session.id)
    assert session.history.cursor == record.cursor
    check_log(await session.store.read_events(session.id))


UNSTORABLE = [pytest.param("half \x00 done", id="nul"), pytest.param("half \ud800 done", id="lone-surrogate")]


@pytest.mark.parametrize("durability", ["step", "turn"])
@pytest.mark.parametrize("reply", UNSTORABLE)
async def test_an_unstorable_reply_is_a_typed_error_and_the_turn_is_closed(
    store: SqliteStore, reply: str, durability: Durability
) -> None:
    llm = ScriptedLLM([reply, "second answer"])
    session = await Session.create(store, SessionRuntime(llm=llm, durability=durability))
    with pytest.raises(LLMError) as caught:
        await session.send("first question")
    assert caught.value.code == "reply_unstorable"
    assert repr(reply) in caught.value.message  # the raw text, escaped
    events = await store.read_events(session.id)
    end = events[-1]
    assert end.type == "turn/end" and end.data["reason"] == "error"
    assert end.data["error"]["code"] == "reply_unstorable" and repr(reply) in end.data["error"]["message"]
    await assert_in_step_with_store(session)
    assert (await session.send("again")).content == "second answer"
    assert not (await store.get_session(session.id)).cursor.turn_open


@pytest.mark.parametrize("reply", UNSTORABLE)
async def test_an_unstorable_streamed_reply_is_a_typed_error_and_the_turn_is_closed(
    store: SqliteStore, reply: str
) -> None:
    llm = ScriptedLLM([reply, "second answer"])
    session = await Session.create(store, SessionRuntime(llm=llm))
    with pytest.raises(LLMError) as caught:
        async for _ in session.stream("first question"):
            pass
    assert caught.value.code == "reply_unstorable"
    await assert_in_step_with_store(session)
    events = [e async for e in session.stream("again")]
    assert isinstance(events[-1], SendDone) and events[-1].result.content == "second answer"


async def test_an_unstorable_tool_call_is_a_typed_error_too(store: SqliteStore) -> None:
    call = tool_call("search", '{"q": "a\\u0000b"}')  # JSON-escaped NUL is storable text
    bad = tool_call("search\x00", "{}")
    llm = ScriptedLLM([Reply(tool_calls=[call]), Reply(tool_calls=[bad]), "done"])
    session = await Session.create(store, SessionRuntime(llm=llm))
    async with session.turn("find it") as turn:
        result = await turn.step()
        await turn.record_tool_call(result.tool_calls[0])
        await turn.record_tool_results([(result.tool_calls[0], "found", False)])
        with pytest.raises(LLMError, match="reply_unstorable|cannot be stored"):
            await turn.step()
    await assert_in_step_with_store(session)
    assert not session.history.cursor.turn_open
    assert (await session.send("again")).content == "done"


async def test_a_user_message_that_cannot_be_stored_is_refused_before_anything_runs(store: SqliteStore) -> None:
    llm = ScriptedLLM(["never"])
    session = await Session.create(store, SessionRuntime(llm=llm))
    with pytest.raises(UsageError, match="NUL"):
        await session.send("bad \x00 input")
    assert llm.requests == [] and (await store.get_session(session.id)).turn_count == 0


def lock_writes(path: Path) -> sqlite3.Connection:
    """Take the SQLite write lock from another connection, as another process would."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


@pytest.mark.parametrize("durability", ["step", "turn"])
async def test_a_store_locked_past_its_timeout_at_the_last_write_does_not_wedge_the_session(
    store: SqliteStore, tmp_path: Path, durability: Durability
) -> None:
    held: list[sqlite3.Connection] = []

    def answer(request: LLMRequest) -> str:
        if not held:
            held.append(lock_writes(tmp_path / "s.db"))  # locked while the model answers
        return "answer"

    # A busy_timeout far below the lease's ttl: the next turn must not wait for this writer's own lease,
    # which it could not release while the file was locked, to lapse.
    runtime = SessionRuntime(llm=FunctionLLM(answer), durability=durability, busy_timeout=0.2)
    session = await Session.create(store, runtime)
    with pytest.raises(ConflictError) as caught:
        await session.send("first question")
    assert caught.value.code == "store_locked"  # retryable: exit status 6
    await assert_in_step_with_store(session)
    with pytest.raises(ConflictError):  # still locked: still a retryable error, still consistent
        await session.send("second question")
    await assert_in_step_with_store(session)
    held[0].rollback()
    held[0].close()
    assert (await session.send("third question")).content == "answer"
    events = await store.read_events(session.id)
    check_log(events)
    assert not (await store.get_session(session.id)).cursor.turn_open
    user_turns = [m.content for m in derive_transcript(events).messages if m.role == "user"]
    assert user_turns[-1] == "third question"


async def test_a_live_turn_still_refuses_a_second_one(store: SqliteStore) -> None:
    session = await Session.create(store, SessionRuntime(llm=ScriptedLLM(["a", "b"])))
    async with session.turn("first") as turn:
        with pytest.raises(UsageError, match="already has turn 1 open"):
            async with session.turn("second"):
                pass
        await turn.step()
    assert (await store.get_session(SessionId(session.id))).turn_count == 1
