"""Erasing through `Agent` on a real SQLite file and a real PostgreSQL schema: nothing of the content remains."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, SessionConfig
from stellate.engine.events import AgentEvent
from stellate.errors import HasDependentsError, NotFoundError, SessionBusyError
from stellate.llm.scripted import Delay, ScriptedLLM
from stellate.log import Message
from stellate.store import BaseStore, SessionId, export_session
from stellate.store.postgres import PostgresStore
from stellate.store.sqlite import SqliteStore

SECRET = "SECRET-7f3a9c-do-not-keep"


async def _consolidate(memory: str | None, messages: Sequence[Message]) -> str:
    return "remembers: " + " | ".join(str(m.content) for m in messages)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "sqlite":
        opened: BaseStore = await SqliteStore.open(f"sqlite:///{tmp_path / 'erase.db'}")
    else:
        url, schema = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")
        opened = await PostgresStore.open(url, schema=schema)
    yield opened
    await opened.close()


def _agent(store: BaseStore, llm: ScriptedLLM | None = None, **options: Any) -> Agent:
    defaults = SessionConfig(consolidate_fn=_consolidate)
    return Agent(store, llm=llm or ScriptedLLM(default="noted"), defaults=defaults, **options)


async def stored_text(store: BaseStore) -> bytes:
    """Every byte the database holds: the SQLite file and its WAL, or every row of every PostgreSQL table."""
    if isinstance(store, SqliteStore):
        return b"".join(Path(p).read_bytes() for p in (store.path, store.path + "-wal") if Path(p).exists())
    assert isinstance(store, PostgresStore)
    import psycopg
    from psycopg import sql

    out: list[str] = []
    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        found = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (store.schema,)
        )
        tables = [row[0] for row in await found.fetchall()]
        assert "events" in tables and "event_history" in tables and "tombstones" in tables
        for table in tables:
            query = sql.SQL("SELECT row_to_json(t)::text FROM {}.{} t").format(
                sql.Identifier(str(store.schema)), sql.Identifier(table)
            )
            out.extend(row[0] for row in await (await conn.execute(query)).fetchall())
    return "\n".join(out).encode()


async def test_an_erased_secret_leaves_no_copy_in_the_database(store: BaseStore, tmp_path: Path) -> None:
    """A secret sent in a turn, read by forks by reference, consolidated, exported and in the event history is
    gone from every stored byte after the erase; the fork made before the secret still reads all of its turns."""
    agent = _agent(store)
    agent.record_history()
    root = await agent.create_session(label="root")
    await agent.turn(root.id, "plain first question")
    early = await agent.fork_session(root.id, label="early", context="inherit")  # before the secret
    await agent.turn(early.id, "early follow-up")
    await agent.turn(root.id, f"my password is {SECRET}")
    late = await agent.fork_session(root.id, label="late", context="inherit")  # inherits the secret
    deeper = await agent.fork_session(late.id, label="deeper", context="inherit")
    await agent.turn(deeper.id, "and then?")
    assert SECRET in await agent.consolidate_session(root.id)
    await export_session(store, SessionId(root.id), tmp_path / "root.jsonl")
    await agent.events_recorded()
    before = await agent.list_messages(early.id)
    assert SECRET.encode() in await stored_text(store)  # the check below can fail

    cascade = await agent.erase_session(late.id, dependents="cascade", by="tester")
    assert cascade.erased == (late.id, deeper.id)
    kept = await agent.erase_session(root.id, dependents="keep", by="tester")
    assert (kept.erased, kept.kept) == ((root.id,), (early.id,))
    await agent.close()

    assert SECRET.encode() not in await stored_text(store)
    assert kept.scrubbed
    fresh = _agent(store)
    assert await fresh.list_messages(early.id) == before
    assert [d.id for d in await fresh.list_session_digests()] == [early.id]
    assert {t.id for t in await fresh.list_tombstones()} == {root.id, late.id, deeper.id}
    assert SECRET in (tmp_path / "root.jsonl").read_text()  # an export is the user's file: erase leaves it
    await fresh.close()


async def test_keep_on_a_depth_three_tree_leaves_every_dependent_whole(store: BaseStore) -> None:
    """Erasing the root of root -> child -> grandchild with ``keep``: both still read their whole transcript."""
    agent = _agent(store)
    root = await agent.create_session(label="root")
    await agent.turn(root.id, "r1")
    child = await agent.fork_session(root.id, label="child", context="inherit")
    await agent.turn(child.id, "c1")
    grand = await agent.fork_session(child.id, label="grand", context="inherit")
    await agent.turn(grand.id, "g1")
    before = {sid: await agent.list_messages(sid) for sid in (child.id, grand.id)}
    with pytest.raises(HasDependentsError) as refused:
        await agent.erase_session(root.id)
    assert refused.value.details["dependents"] == [child.id, grand.id]
    await agent.erase_session(root.id, dependents="keep")
    assert {sid: await agent.list_messages(sid) for sid in (child.id, grand.id)} == before
    await agent.turn(grand.id, "g2")  # still a writable session
    topology = await agent.get_topology()
    assert [node.id for node in topology] == [child.id]  # the child of an erased root shows as a root
    await agent.close()


async def test_a_space_erase_takes_every_session_and_nothing_of_another_space(store: BaseStore) -> None:
    """`erase_space` erases every session of the agent's space; another space keeps all of its sessions."""
    mine, theirs = _agent(store.in_space("mine")), _agent(store.in_space("theirs"))
    roots = [await mine.create_session(label=f"r{n}") for n in range(3)]
    await mine.fork_session(roots[0].id, label="fork", context="inherit")
    other = await theirs.create_session(label="other")
    plan = await mine.erase_space(by="admin")
    assert len(plan.erased) == 4
    assert await mine.list_session_digests() == []
    assert [d.id for d in await theirs.list_session_digests()] == [other.id]
    assert await theirs.list_tombstones() == []
    await mine.close()
    await theirs.close()


async def test_prune_dry_run_names_exactly_what_prune_erases(store: BaseStore) -> None:
    """Only archived sessions idle for longer than the age go; the dry run lists exactly them."""
    agent = _agent(store)
    old = await agent.create_session(label="old")
    live = await agent.create_session(label="live")
    await agent.turn(old.id, "hi")
    await agent.archive_session(old.id)
    await asyncio.sleep(0.05)
    assert (await agent.prune_sessions(3600, dry_run=True)).erased == ()
    dry = await agent.prune_sessions(0.01, dry_run=True)
    assert dry.erased == (old.id,)
    assert [d.id for d in await agent.list_session_digests()] == [old.id, live.id]
    done = await agent.prune_sessions(0.01)
    assert (done.erased, done.kept) == (dry.erased, dry.kept)
    assert [d.id for d in await agent.list_session_digests()] == [live.id]
    assert [t.erased_by for t in await agent.list_tombstones()] == ["prune"]
    await agent.close()


async def test_an_erase_waits_for_a_running_turn_or_answers_busy(store: BaseStore) -> None:
    """During a turn, an erase with no wait answers session_busy; one that waits erases once the turn ended."""
    agent = _agent(store, ScriptedLLM([Delay(seconds=0.6, then="slow answer")]))
    root = await agent.create_session(label="busy")
    seen: list[AgentEvent] = []
    agent.add_hook(seen.append, types=["session_erased"])
    turn = asyncio.create_task(agent.turn(root.id, "take your time"))
    while (await agent.get_session_digest(root.id)).turn_count == 0:
        await asyncio.sleep(0.01)
    with pytest.raises(SessionBusyError):
        await agent.erase_session(root.id, busy_timeout=0)
    plan = await agent.erase_session(root.id, busy_timeout=10)
    assert (await turn).content == "slow answer"
    assert plan.erased == (root.id,)
    assert [e.session_id for e in seen] == [root.id]
    with pytest.raises(NotFoundError):
        await agent.turn(root.id, "after")
    await agent.close()


async def test_a_secret_in_an_overwritten_memory_leaves_no_copy_either(store: BaseStore) -> None:
    """A memory holding the secret, replaced twice before the erase, leaves no stale bytes in the database."""
    agent = _agent(store)
    root = await agent.create_session(label="memories")
    await agent.put_memory(root.id, f"first memory with {SECRET}")
    await agent.put_memory(root.id, "a clean memory")
    await agent.put_insight(root.id, f"insight with {SECRET}")
    await agent.put_insight(root.id, "a clean insight")
    await agent.erase_session(root.id)
    await agent.close()
    assert SECRET.encode() not in await stored_text(store)
