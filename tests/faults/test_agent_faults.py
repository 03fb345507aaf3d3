"""The same faults through the `Agent` facade, whose cached sessions outlive a failed turn."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from fault_support import lookup

from stellate import Agent
from stellate.errors import LLMError, StoreError
from stellate.llm.scripted import FunctionLLM, Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import check_log
from stellate.store import BaseStore, SessionId
from stellate.store.memory import MemoryStore


async def test_an_unstorable_reply_through_the_agent_fails_the_turn_and_the_next_one_works() -> None:
    store = MemoryStore()
    agent = Agent(store, llm=ScriptedLLM(["bad \x00 reply", "A clean reply."]))
    session = await agent.create_session(label="Faults")
    with pytest.raises(LLMError) as caught:
        await agent.turn(session.id, "Hi")
    assert caught.value.code == "reply_unstorable"
    assert (await agent.turn(session.id, "Hi again")).content == "A clean reply."
    check_log(await store.read_events(SessionId(session.id)))
    await agent.close()


async def test_unstorable_tool_output_through_the_agent_is_noted_and_the_turn_completes() -> None:
    store = MemoryStore()
    calls = [tool_call("lookup", {"city": "Le\x00iden"})]  # the tool echoes the NUL back in its output
    agent = Agent(store, llm=ScriptedLLM([Reply(tool_calls=calls), "Done."]), tools=[lookup])
    session = await agent.create_session(label="Faults")
    result = await agent.turn(session.id, "Weather?")
    assert result.reason == "completed" and result.content == "Done."
    stored = next(e for e in await store.read_events(SessionId(session.id)) if e.type == "tool/result")
    assert stored.data["content"].startswith("Le\ufffdiden") and stored.data["replaced_characters"] == 1
    await agent.close()


@pytest.mark.postgres
async def test_postgres_connections_killed_mid_turn_do_not_wedge_the_session(pg_url: str, pg_schema: str) -> None:
    """A real fault: every connection of the store is terminated while the model answers."""
    from stellate.store.postgres import PostgresStore

    # A name of its own, so that only this store's connections are killed (other tests share the server).
    name = f"stellate_{pg_schema}"
    separator = "&" if "?" in pg_url else "?"
    store: BaseStore = await PostgresStore.open(f"{pg_url}{separator}application_name={name}", schema=pg_schema)

    async def answer(request: LLMRequest) -> str:
        if len(llm.requests) == 2:  # during the second turn
            assert await asyncio.to_thread(kill_connections, pg_url, name) >= 1
        return "An answer."

    llm = FunctionLLM(answer)
    agent = Agent(store, llm=llm)
    try:
        session = await agent.create_session(label="Faults")
        await agent.turn(session.id, "First")
        try:
            await agent.turn(session.id, "Second")
        except StoreError:
            pass  # the lost connections usually surface (the pool has one); the session must not stay stuck
        third = await agent.turn(session.id, "Third")
        assert third.reason == "completed" and third.content == "An answer."
        events = await store.read_events(SessionId(session.id))
        check_log(events)
        assert not (await store.get_session(SessionId(session.id))).cursor.turn_open
        assert [e.data["content"] for e in events if e.type == "user/message"] == ["First", "Second", "Third"]
    finally:
        await agent.close()
        await store.close()


def kill_connections(url: str, application_name: str) -> int:
    """Terminate the server's connections that carry ``application_name``; returns how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchall()
    return len(rows)
