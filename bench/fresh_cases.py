"""B9: a fresh process (issue 22, goal 3): its first turn after H prior turns, and the CLI's start.

The worker stores the history, then starts K new interpreters one after the other. Each imports its framework
(timed apart: ``imports``), then opens the store and runs one turn (``first``): nothing of the worker's is
warm, not the imports, not the tokenizer, not a connection. For stellate the session ran one turn in an earlier
process first (as any session that was ever used), so its fold segments are stored. The CLI rows time whole
processes, from start to exit, against the floor ``python -c "import sqlite3, pydantic"``.

Bytecode: every child may write and read it under a cache of the case's own (``PYTHONPYCACHEPREFIX``, whatever
``PYTHONDONTWRITEBYTECODE`` says), and one untimed run of each command fills it first, so that every system
starts as an installed package does (with its ``.pyc`` files), not compiling its sources.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.common import ms

ROOT = Path(__file__).resolve().parent.parent

_STELLATE = """
    import asyncio, sys, time
    started = time.perf_counter()
    from stellate import Agent
    from stellate.store.sqlite import SqliteStore
    from bench.fakes import REPLY, USER, InstantLLM
    imported = time.perf_counter()

    async def first_turn():
        store = await SqliteStore.open(f"sqlite:///{PARAMS['dir']}/stellate.db")
        try:
            return await Agent(store, llm=InstantLLM()).turn(PARAMS["sid"], USER)
        finally:
            await store.close()

    result = asyncio.run(first_turn())
    assert result.content == REPLY
"""
_LANGGRAPH = """
    import sqlite3, time
    started = time.perf_counter()
    from langgraph.checkpoint.sqlite import SqliteSaver
    from bench.fakes import REPLY
    from bench.langgraph_cases import _turn, build_graph
    imported = time.perf_counter()
    conn = sqlite3.connect(f"{PARAMS['dir']}/langgraph.db", check_same_thread=False)
    state = _turn(build_graph(SqliteSaver(conn)), {"configurable": {"thread_id": "bench"}})
    conn.close()
    assert state["messages"][-1].content == REPLY
"""
_AGENTS = """
    import asyncio, time
    started = time.perf_counter()
    from agents import Runner, SQLiteSession
    from bench.agents_cases import _agent
    from bench.fakes import REPLY, USER
    imported = time.perf_counter()

    async def first_turn():
        session = SQLiteSession("s1", db_path=f"{PARAMS['dir']}/agents.db")
        try:
            return await Runner.run(_agent(), USER, session=session)
        finally:
            session.close()

    assert asyncio.run(first_turn()).final_output == REPLY
"""
_REPORT = """
    done = time.perf_counter()
    print("FRESH", json.dumps({"imports": (imported - started) * 1000, "first": (done - imported) * 1000}))
"""


def _environment(directory: str) -> dict[str, str]:
    """The children's environment: bytecode cached under ``directory`` (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(Path(directory) / "pycache")}


def _fresh(body: str, params: dict[str, Any], k: int) -> dict[str, Any]:
    """K new interpreters running ``body`` (after one untimed, filling the bytecode cache): their times."""
    prelude = f"import json, sys\nsys.path.insert(0, {str(ROOT)!r})\nPARAMS = json.loads({json.dumps(params)!r})\n"
    code = prelude + textwrap.dedent(body) + textwrap.dedent(_REPORT)
    env = _environment(params["dir"])
    imports, first = [], []
    for run in range(k + 1 if k else 0):
        command = [sys.executable, "-c", code]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("FRESH ")]
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"fresh process failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
        out = json.loads(lines[-1][len("FRESH ") :])
        if run:
            imports.append(out["imports"])
            first.append(out["first"])
    return {"first": {"ms": first}, "imports": {"ms": imports}}


def stellate(params: dict[str, Any]) -> dict[str, Any]:
    """stellate: a fresh process's first `Agent.turn` on a session of H turns (SQLite)."""
    from bench.fakes import USER, InstantLLM
    from bench.stellate_cases import Backend, _new_session
    from stellate.agent.agent import Agent

    async def prepare() -> str:
        store = await Backend(params).open()
        sid = await _new_session(store, params["h"])
        await Agent(store, llm=InstantLLM()).turn(sid, USER)  # an earlier process: its open stored the segments
        await store.close()
        return sid

    sid = asyncio.run(prepare())
    return _fresh(_STELLATE, {"dir": params["dir"], "sid": sid}, params["k"])


def langgraph(params: dict[str, Any]) -> dict[str, Any]:
    """LangGraph: a fresh process's first ``graph.invoke`` on a thread of H turns (SqliteSaver)."""
    from bench.langgraph_cases import _history, _saver, build_graph

    with _saver(params) as (saver, _size):
        graph = build_graph(saver)
        graph.update_state(
            {"configurable": {"thread_id": "bench"}}, {"messages": _history(params["h"])}, as_node="chat"
        )
    return _fresh(_LANGGRAPH, {"dir": params["dir"]}, params["k"])


def agents(params: dict[str, Any]) -> dict[str, Any]:
    """The Agents SDK: a fresh process's first ``Runner.run`` on a session of H turns (SQLiteSession)."""
    from bench.agents_cases import _close, _history, _open

    async def prepare() -> None:
        session, _size = await _open(params)
        await session.add_items(await _history(params["h"]))
        await _close(session)

    asyncio.run(prepare())
    return _fresh(_AGENTS, {"dir": params["dir"]}, params["k"])


def _wall(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=True)
    return ms(time.perf_counter() - started)


def cli(params: dict[str, Any]) -> dict[str, Any]:
    """Whole processes: ``stellate --help``, ``stellate sessions list`` (one session of H turns), and the floor."""
    db = Path(params["dir"]) / "stellate.db"
    stellate({**params, "k": 0})  # the database to list

    def command(*argv: str) -> list[str]:
        return [sys.executable, "-c", f"import sys; from stellate.cli import main; sys.exit(main({list(argv)!r}))"]

    commands = {
        "help": command("--help"),
        "list": command("--db", str(db), "sessions", "list"),
        "floor": [sys.executable, "-c", "import sqlite3, pydantic"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    env = _environment(params["dir"])
    for argv in commands.values():  # untimed: fills the bytecode cache
        _wall(argv, Path(params["dir"]), env)
    for _ in range(params["k"]):  # interleaved, so that a busy moment of the machine hits every row alike
        for name, argv in commands.items():
            times[name].append(_wall(argv, Path(params["dir"]), env))
    return {name: {"ms": values} for name, values in times.items()}
