"""LangGraph's side, set up as peer-bench.md describes.

A `StateGraph` over ``messages: Annotated[list, add_messages]`` with one node calling a fake chat model, compiled
with `SqliteSaver` (WAL, ``synchronous=FULL``: LangGraph's defaults) or `PostgresSaver`, one thread. History is
pre-populated with one bulk ``update_state`` of copies of a real turn's messages (peer-bench.md checked that
this matches real turns in per-turn cost; it leaves one checkpoint where real turns leave 3 per turn).
"""

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from bench.common import EVENTS_PER_TURN, PG_URL, per_fork, per_turn, pg_bytes, pg_settle, sqlite_bytes, timed
from bench.fakes import REPLY, USER, langgraph_chat_model


class State(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


def build_graph(checkpointer: Any, model: Any = None) -> Any:
    model = model if model is not None else langgraph_chat_model()

    def chat(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(checkpointer=checkpointer)


def _history(turns: int) -> list[BaseMessage]:
    """``turns`` copies of a real turn's two messages (captured in memory), each with a fresh id."""
    graph = build_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "template"}}
    template = graph.invoke({"messages": [HumanMessage(USER)]}, config)["messages"]
    return [m.model_copy(update={"id": str(uuid.uuid4())}) for _ in range(turns) for m in template]


@contextmanager
def _saver(params: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(checkpointer, size function) on a fresh SQLite file or PostgreSQL schema.

    The size function with ``settle=True`` first runs ``VACUUM ANALYZE`` on PostgreSQL (`pg_settle`).
    """
    if params.get("db") == "pg":
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import sql
        from psycopg.rows import dict_row

        schema = params["schema"]
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        options = f"-c search_path={schema}"
        with psycopg.connect(PG_URL, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=options) as c:
            saver = PostgresSaver(c)
            saver.setup()
            yield saver, lambda settle=False: (pg_settle(schema) if settle else None, pg_bytes(schema))[1]
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(params["dir"]) / "langgraph.db"
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        yield SqliteSaver(conn), lambda settle=False: sqlite_bytes(path, conn)
    finally:
        conn.close()


def _turn(graph: Any, config: dict[str, Any]) -> Any:
    return graph.invoke({"messages": [HumanMessage(USER)]}, config)


def b1(params: dict[str, Any]) -> dict[str, Any]:
    """K timed ``graph.invoke`` turns after H prior turns (bulk), W untimed warm-up turns."""
    h, k, warmup = params["h"], params["k"], params.get("warmup", 2)
    config = {"configurable": {"thread_id": "bench"}}
    with _saver(params) as (saver, size):
        graph = build_graph(saver)
        graph.update_state(config, {"messages": _history(h)}, as_node="chat")
        size(settle=True)
        for _ in range(warmup):
            _turn(graph, config)
        before = size()
        times, state = [], None
        for _ in range(k):
            elapsed, state = timed(lambda: _turn(graph, config))
            times.append(elapsed)
        after = size()
    assert state is not None and state["messages"][-1].content == REPLY
    assert len(state["messages"]) == 2 * (h + warmup + k), len(state["messages"])
    return {"ms": times, **per_turn(before, after, k)}


def b1_cold(params: dict[str, Any]) -> dict[str, Any]:
    """Cold turns: each opens a new connection, saver and graph, then runs one turn after H prior turns."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    config = {"configurable": {"thread_id": "bench"}}
    path = Path(params["dir"]) / "langgraph.db"
    with _saver(params) as (saver, _size):
        graph = build_graph(saver)
        graph.update_state(config, {"messages": _history(params["h"])}, as_node="chat")
        _turn(graph, {"configurable": {"thread_id": "warm-up"}})  # code paths warm, as in any later process

    def cold_turn() -> Any:
        conn = sqlite3.connect(str(path), check_same_thread=False)
        try:
            return _turn(build_graph(SqliteSaver(conn)), config)
        finally:
            conn.close()

    times, state = [], None
    for _ in range(params["k"]):
        elapsed, state = timed(cold_turn)
        times.append(elapsed)
    assert state is not None and state["messages"][-1].content == REPLY
    return {"ms": times}


def b2(params: dict[str, Any]) -> dict[str, Any]:
    """Fork from the checkpoint holding N/6 turns, once the thread has moved past it (peer-bench.md)."""
    turns = params["n"] // EVENTS_PER_TURN
    config = {"configurable": {"thread_id": "bench"}}
    with _saver(params) as (saver, size):
        graph = build_graph(saver)
        graph.update_state(config, {"messages": _history(turns)}, as_node="chat")
        size(settle=True)
        past = graph.get_state(config).config
        _turn(graph, config)
        before, times, child = size(), [], None
        for i in range(params["forks"]):
            update = {"messages": [HumanMessage(f"fork {i}")]}
            elapsed, child = timed(lambda update=update: graph.update_state(past, update))
            times.append(elapsed)
        fork_bytes = per_fork(before, size(), params["forks"])
        forked = graph.get_state(child)
        assert len(forked.values["messages"]) == 2 * turns + 1
        assert forked.parent_config["configurable"]["checkpoint_id"] == past["configurable"]["checkpoint_id"]
        with_turn = []
        for _ in range(params["fork_turns"]):
            elapsed, state = timed(lambda: _turn(graph, past))
            assert state["messages"][-1].content == REPLY and len(state["messages"]) == 2 * turns + 2
            with_turn.append(elapsed)
    return {"fork": {"ms": times, **fork_bytes}, "fork_turn": {"ms": with_turn}}


def b3(params: dict[str, Any]) -> dict[str, Any]:
    """Reference for B3: read the thread's state (N/6 turns) with a fresh connection and graph."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    turns = params["n"] // EVENTS_PER_TURN
    config = {"configurable": {"thread_id": "bench"}}
    path = Path(params["dir"]) / "langgraph.db"
    with _saver(params) as (saver, _size):
        build_graph(saver).update_state(config, {"messages": _history(turns)}, as_node="chat")
    times = []
    for _ in range(params["runs"]):

        def open_and_read() -> Any:
            conn = sqlite3.connect(str(path), check_same_thread=False)
            try:
                return build_graph(SqliteSaver(conn)).get_state(config).values["messages"]
            finally:
                conn.close()

        elapsed, messages = timed(open_and_read)
        assert len(messages) == 2 * turns
        times.append(elapsed)
    return {"ms": times}
