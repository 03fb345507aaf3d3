"""The OpenAI Agents SDK's side, set up as peer-bench.md describes.

``Runner.run(agent, "hi", session=...)`` with a fake `Model`, tracing off, on `SQLiteSession` (its defaults:
WAL, ``synchronous=FULL``), `AdvancedSQLiteSession` (for ``create_branch_from_turn``), or `SQLAlchemySession`
on PostgreSQL. History is pre-populated with one bulk ``add_items`` of copies of a real turn's items
(peer-bench.md checked that this matches real turns in per-turn cost and file size).
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

from agents import Agent, Runner, SQLiteSession, set_tracing_disabled
from agents.extensions.memory import AdvancedSQLiteSession

from bench.common import EVENTS_PER_TURN, PG_URL, atimed, per_fork, per_turn, pg_bytes, pg_settle, sqlite_bytes
from bench.fakes import REPLY, USER, agents_model

set_tracing_disabled(True)


def _agent() -> Agent:
    return Agent(name="bench", model=agents_model())


async def _history(turns: int) -> list[Any]:
    """``turns`` copies of the items one real run stores (captured in memory), each output with a fresh id."""
    session = SQLiteSession("template")
    await Runner.run(_agent(), USER, session=session)
    template = await session.get_items()
    session.close()
    items = []
    for _ in range(turns):
        for item in template:
            clone = copy.deepcopy(item)
            if "id" in clone:
                clone["id"] = f"msg_{uuid.uuid4().hex}"
            items.append(clone)
    return items


async def _open(params: dict[str, Any], advanced: bool = False) -> tuple[Any, Any]:
    """(session, size function) on a fresh SQLite file or PostgreSQL schema."""
    if params.get("db") == "pg":
        import psycopg
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from psycopg import sql
        from sqlalchemy.ext.asyncio import create_async_engine

        schema = params["schema"]
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        url = PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
        engine = create_async_engine(url, connect_args={"options": f"-c search_path={schema}"})
        return SQLAlchemySession("s1", engine=engine, create_tables=True), lambda: pg_bytes(schema)
    path = Path(params["dir"]) / "agents.db"
    if advanced:
        session: Any = AdvancedSQLiteSession(session_id="s1", db_path=path, create_tables=True)
    else:
        session = SQLiteSession("s1", db_path=path)
    return session, lambda: sqlite_bytes(path)


async def _close(session: Any) -> None:
    engine = getattr(session, "_engine", None)
    if engine is not None:
        await engine.dispose()
    else:
        session.close()


async def _b1(params: dict[str, Any]) -> dict[str, Any]:
    h, k, warmup = params["h"], params["k"], params.get("warmup", 2)
    session, size = await _open(params, advanced=params.get("advanced", False))
    agent = _agent()
    await session.add_items(await _history(h))
    if params.get("db") == "pg":
        pg_settle(params["schema"])
    for _ in range(warmup):
        await Runner.run(agent, USER, session=session)
    before = size()
    times, result = [], None
    for _ in range(k):
        elapsed, result = await atimed(lambda: Runner.run(agent, USER, session=session))
        times.append(elapsed)
    after = size()
    stored = len(await session.get_items())
    await _close(session)
    assert result is not None and result.final_output == REPLY
    assert stored == 2 * (h + warmup + k), stored
    return {"ms": times, **per_turn(before, after, k)}


def b1(params: dict[str, Any]) -> dict[str, Any]:
    """K timed ``Runner.run`` turns after H prior turns (bulk), W untimed warm-up turns."""
    return asyncio.run(_b1(params))


async def _b1_cold(params: dict[str, Any]) -> dict[str, Any]:
    session, _size = await _open(params)
    await session.add_items(await _history(params["h"]))
    await Runner.run(_agent(), USER, session=SQLiteSession("warm-up"))  # code paths warm, as in any later process
    await _close(session)
    times, result = [], None
    for _ in range(params["k"]):

        async def cold_turn() -> Any:
            fresh = SQLiteSession("s1", db_path=Path(params["dir"]) / "agents.db")
            try:
                return await Runner.run(_agent(), USER, session=fresh)
            finally:
                fresh.close()

        elapsed, result = await atimed(cold_turn)
        times.append(elapsed)
    assert result is not None and result.final_output == REPLY
    return {"ms": times}


def b1_cold(params: dict[str, Any]) -> dict[str, Any]:
    """Cold turns: each on a new `SQLiteSession` object (new connection), after H prior turns."""
    return asyncio.run(_b1_cold(params))


async def _b2(params: dict[str, Any]) -> dict[str, Any]:
    turns = params["n"] // EVENTS_PER_TURN
    session, size = await _open(params, advanced=True)
    agent = _agent()
    await session.add_items(await _history(turns))
    await Runner.run(agent, USER, session=session)  # the head moves past the fork point
    before, times = size(), []
    for i in range(params["forks"]):
        await session.switch_to_branch("main")
        elapsed, _ = await atimed(lambda i=i: session.create_branch_from_turn(turns + 1, f"fork_{i}"))
        times.append(elapsed)
    fork_bytes = per_fork(before, size(), params["forks"])
    assert len(await session.get_items()) == 2 * turns
    with_turn = []
    for i in range(params["fork_turns"]):
        await session.switch_to_branch("main")

        async def fork_and_run(i: int = i) -> Any:
            await session.create_branch_from_turn(turns + 1, f"fork_turn_{i}")
            return await Runner.run(agent, USER, session=session)

        elapsed, result = await atimed(fork_and_run)
        assert result.final_output == REPLY
        with_turn.append(elapsed)
    await _close(session)
    return {"fork": {"ms": times, **fork_bytes}, "fork_turn": {"ms": with_turn}}


def b2(params: dict[str, Any]) -> dict[str, Any]:
    """``AdvancedSQLiteSession.create_branch_from_turn`` at the turn after N/6 turns (peer-bench.md)."""
    return asyncio.run(_b2(params))


async def _b3(params: dict[str, Any]) -> dict[str, Any]:
    turns = params["n"] // EVENTS_PER_TURN
    session, _size = await _open(params)
    await session.add_items(await _history(turns))
    await _close(session)
    times = []
    for _ in range(params["runs"]):

        async def open_and_read() -> list[Any]:
            fresh = SQLiteSession("s1", db_path=Path(params["dir"]) / "agents.db")
            try:
                return await fresh.get_items()
            finally:
                fresh.close()

        elapsed, items = await atimed(open_and_read)
        assert len(items) == 2 * turns
        times.append(elapsed)
    return {"ms": times}


def b3(params: dict[str, Any]) -> dict[str, Any]:
    """Reference for B3: ``SQLiteSession.get_items()`` of N/6 turns on a fresh session object."""
    return asyncio.run(_b3(params))
