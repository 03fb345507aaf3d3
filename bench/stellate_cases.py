"""stellate's side of every benchmark (B1-B5), on SQLite or PostgreSQL.

History is pre-populated by appending copies of one real turn's events through the store in large
batches (the store validates every event as it would for a live turn); the measured operations then
run through the public API on a freshly opened store and `Agent`, so no cache from the bulk load helps.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bench.common import (
    EVENTS_PER_TURN,
    PG_URL,
    atimed,
    per_fork,
    per_turn,
    pg_bytes,
    pg_settle,
    sqlite_bytes,
    turn_events,
)
from bench.fakes import REPLY, USER, InstantLLM
from stellate.agent.agent import Agent
from stellate.log.events import Event, make_event
from stellate.session.session import Session
from stellate.session.types import SessionRuntime
from stellate.store import BaseStore, Boundary, ForkRequest, SessionId
from stellate.store.sqlite import SqliteStore

BATCH = 6000


class Backend:
    """Where the store lives: a SQLite file in ``directory``, or a throwaway PostgreSQL schema."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.kind = params.get("db", "sqlite")
        self.path = Path(params["dir"]) / "stellate.db"
        self.schema: str | None = params.get("schema")

    async def open(self) -> BaseStore:
        if self.kind == "pg":
            from stellate.store.postgres import PostgresStore

            return await PostgresStore.open(PG_URL, schema=self.schema)
        return await SqliteStore.open(f"sqlite:///{self.path}")

    def settle(self) -> None:
        if self.kind == "pg":
            assert self.schema is not None
            pg_settle(self.schema)

    def bytes(self) -> tuple[int, int]:
        if self.kind == "pg":
            assert self.schema is not None
            return pg_bytes(self.schema)
        return sqlite_bytes(self.path)


async def turn_template() -> list[Event]:
    """The events one real `Agent.turn` writes (captured on an in-memory store)."""
    agent = Agent("memory://", llm=InstantLLM())
    digest = await agent.create_session(label="template")
    await agent.turn(digest.id, USER)
    events = await (await agent.store()).read_events(SessionId(digest.id))
    await agent.close()
    turn = [e for e in events if e.seq > 0 and e.type not in ("session/created", "config/frozen")]
    assert [e.type for e in turn][0] == "turn/start" and len(turn) == EVENTS_PER_TURN, turn
    return turn


async def populate(store: BaseStore, session_id: str, turns: int, *, first: int = 1) -> None:
    """Append ``turns`` copies of a real turn, in batches of `BATCH` events."""
    template = await turn_template()
    per_batch = BATCH // EVENTS_PER_TURN
    for start in range(first, first + turns, per_batch):
        count = min(per_batch, first + turns - start)
        await store.append(SessionId(session_id), turn_events(template, start, count))


async def _new_session(store: BaseStore, turns: int, *, real: bool = False) -> str:
    agent = Agent(store, llm=InstantLLM())
    digest = await agent.create_session(label="bench")
    if real:
        for _ in range(turns):
            await agent.turn(digest.id, USER)
    else:
        await populate(store, digest.id, turns)
    return digest.id


# -- B1 / B5: per-turn overhead ------------------------------------------------------------------


async def b1(params: dict[str, Any]) -> dict[str, Any]:
    """K timed `Agent.turn` calls after H prior turns (fresh store and agent; W untimed warm-up turns)."""
    backend = Backend(params)
    h, k, warmup = params["h"], params["k"], params.get("warmup", 2)
    store = await backend.open()
    sid = await _new_session(store, h, real=params.get("real", False))
    await store.close()
    backend.settle()
    store = await backend.open()
    agent = Agent(store, llm=InstantLLM(), durability=params.get("durability", "step"))
    for _ in range(warmup):  # the first turn loads the session (B3 measures that)
        await agent.turn(sid, USER)
    size_before = backend.bytes()
    times, result = [], None
    for _ in range(k):
        elapsed, result = await atimed(lambda: agent.turn(sid, USER))
        times.append(elapsed)
    size_after = backend.bytes()
    record = await store.get_session(SessionId(sid))
    await agent.close()
    await store.close()
    assert result is not None and result.content == REPLY, result
    assert record.turn_count == h + warmup + k, record.turn_count
    return {"ms": times, **per_turn(size_before, size_after, k)}


# -- B2 / B5: fork ---------------------------------------------------------------------------------


async def b2(params: dict[str, Any]) -> dict[str, Any]:
    """Fork a session holding N events: through `Agent.fork_session` (inherit) and the store directly."""
    backend = Backend(params)
    turns = params["n"] // EVENTS_PER_TURN
    store = await backend.open()
    sid = await _new_session(store, turns)
    await store.close()
    backend.settle()
    store = await backend.open()
    end_seq = (await store.get_session(SessionId(sid))).next_seq - 1  # turn/end of the last populated turn
    agent = Agent(store, llm=InstantLLM())
    await agent.turn(sid, USER)  # the source is live (loaded) in the agent, as when a user branches mid-chat
    out = {
        "agent": await _agent_forks(agent, backend, sid, params["forks"], turns + 1),
        "agent_turn": await _agent_fork_turns(agent, sid, params["fork_turns"]),
        "store": await _store_forks(store, backend, sid, params["forks"], end_seq),
    }
    await agent.close()
    await store.close()
    return out


async def _agent_forks(agent: Agent, backend: Backend, sid: str, forks: int, turns: int) -> dict[str, Any]:
    before, times, child = backend.bytes(), [], None
    for i in range(forks):
        elapsed, child = await atimed(lambda i=i: agent.fork_session(sid, label=f"fork {i}", context="inherit"))
        times.append(elapsed)
    after = backend.bytes()
    assert child is not None
    messages = await agent.list_messages(child.id)
    assert len(messages) == 2 * turns, (len(messages), turns)
    return {"ms": times, **per_fork(before, after, forks)}


async def _agent_fork_turns(agent: Agent, sid: str, forks: int) -> dict[str, Any]:
    async def fork_and_turn(i: int) -> Any:
        child = await agent.fork_session(sid, label=f"fork+turn {i}", context="inherit")
        return await agent.turn(child.id, USER)

    times = []
    for i in range(forks):
        elapsed, result = await atimed(lambda i=i: fork_and_turn(i))
        assert result.content == REPLY
        times.append(elapsed)
    return {"ms": times}


async def _store_forks(store: BaseStore, backend: Backend, sid: str, forks: int, end_seq: int) -> dict[str, Any]:
    """Raw store fork at the end of the pre-populated turns (a past point: the source has moved on since)."""
    source = SessionId(sid)
    before, times, record = backend.bytes(), [], None
    for i in range(forks):
        request = ForkRequest(source_id=source, point=Boundary(seq=end_seq))
        created = [make_event("session/created", {"label": f"store fork {i}"})]
        elapsed, record = await atimed(
            lambda request=request, created=created: store.create_session(
                parent_id=source, fork=request, events=created
            )
        )
        times.append(elapsed)
    after = backend.bytes()
    assert record is not None and record.inherited == end_seq + 1, record
    return {"ms": times, **per_fork(before, after, forks)}


# -- B3: cold open ---------------------------------------------------------------------------------


async def b3(params: dict[str, Any]) -> dict[str, Any]:
    """`Session.load` + transcript of an N-event session, from a fresh copy of the file each time."""
    directory = Path(params["dir"])
    base = directory / "base.db"
    store = await SqliteStore.open(f"sqlite:///{base}")
    turns = (params["n"] - (5 if params.get("repair") else 0)) // EVENTS_PER_TURN
    sid = await _new_session(store, turns)
    if params.get("repair"):
        await store.append(SessionId(sid), _open_turn(turns + 1))
    events = (await store.get_session(SessionId(sid))).next_seq
    await store.close()
    sqlite_bytes(base)
    load_ms, total_ms = [], []
    for run in range(params["runs"]):
        copy = directory / f"run{run}.db"
        shutil.copyfile(base, copy)
        store = await SqliteStore.open(f"sqlite:///{copy}")
        runtime = SessionRuntime(llm=InstantLLM())
        repair = bool(params.get("repair"))
        loaded, session = await atimed(
            lambda s=store, r=runtime, fix=repair: Session.load(s, SessionId(sid), r, repair=fix)
        )
        derived, messages = await atimed(session.messages)
        assert len(messages) == 2 * turns + (3 if params.get("repair") else 0), len(messages)
        assert not session.history.cursor.turn_open
        load_ms.append(loaded)
        total_ms.append(loaded + derived)
        await store.close()
        copy.unlink()
    return {"ms": total_ms, "load_ms": load_ms, "events": events}


def _open_turn(number: int) -> list[Any]:
    """A turn a dead process left open: the model asked for a tool, which had started running."""
    call = {"id": "call_1", "name": "lookup", "arguments": "{}"}
    return [
        make_event("turn/start", {"turn": number}),
        make_event("user/message", {"content": USER}),
        make_event("step/start", {"turn": number, "step": 1, "tools": ["lookup"]}),
        make_event("assistant/message", {"content": "checking", "tool_calls": [call]}),
        make_event("tool/call", {"call_id": "call_1", "name": "lookup", "arguments": "{}"}),
    ]


# -- B4: digests of a forest ---------------------------------------------------------------------


async def b4(params: dict[str, Any]) -> dict[str, Any]:
    """`Agent.list_session_digests` over a forest of S sessions (roots with one turn, the rest forks of them)."""
    backend = Backend(params)
    store = await backend.open()
    await _forest(store, params["sessions"], params.get("per_root", 100))
    await store.close()
    store = await backend.open()
    agent = Agent(store, llm=InstantLLM())
    times, digests = [], []
    for _ in range(params["runs"]):
        elapsed, digests = await atimed(agent.list_session_digests)
        times.append(elapsed)
    assert len(digests) == params["sessions"], len(digests)
    await agent.close()
    await store.close()
    return {"ms": times}


async def _forest(store: BaseStore, sessions: int, per_root: int) -> None:
    template = await turn_template()
    made = 0
    while made < sessions:
        root = await store.create_session(events=[make_event("session/created", {"label": f"root {made}"})])
        await store.append(root.id, turn_events(template, 1, 1))
        made += 1
        point = ForkRequest(source_id=root.id, point=Boundary(seq=EVENTS_PER_TURN))
        for i in range(min(per_root - 1, sessions - made)):
            label = make_event("session/created", {"label": f"branch {i}"})
            await store.create_session(parent_id=root.id, fork=point, events=[label])
            made += 1
