"""B6 made real (issue 22, goal 1): turns through HTTP, each server in its own process, the model in another.

The model is the loopback mock (`bench.mock_server`, its own process) answering every request after
``latency_ms``, streamed when asked. Each system is served as its users run it:

- ``stellate``: ``stellate serve`` (``python -m stellate.cli serve``) with ``--provider openai --base-url``
  the mock: the real `OpenAIAdapter`, streamed. SQLite (one worker), or PostgreSQL with one or two worker
  processes on one throwaway schema (sessions are spread over the workers, each session's turns go to the
  worker that created it).
- ``floor``: `bench.floor_app`, a minimal FastAPI app on uvicorn writing the rows of a stellate turn's log.
- ``langgraph``: ``langgraph dev`` (``langgraph-cli[inmem]``) serving a graph whose node calls a
  ``ChatOpenAI`` pointed at the mock; turns are ``POST /threads/{id}/runs/wait``. Its executable comes from
  ``$STELLATE_BENCH_LANGGRAPH`` or ``PATH`` (it needs a virtualenv of its own: see `LANGGRAPH_DEV_MISSING`).

C sessions each run K turns back to back, all sessions at once, after one untimed warm-up turn each. Per row:
p50 and p99 of the latency the client sees, turns per second, and the server's CPU per turn (user + system
time of the server process(es) from /proc over the timed part, divided by the turns; the mock's and the
client's CPU are not in it). ``STELLATE_BENCH_PROFILE=PATH``: the stellate worker runs under cProfile and
writes its stats to PATH when it stops.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import PG_URL, median, ms
from bench.mock_server import mock_server_process
from bench.server_cases import _free_port, client, quantile
from bench.streaming_cases import _cpu_seconds

REPLY = "ok"  # what the mock answers
USER = "next step, please"
_GRAPH = Path(__file__).with_name("langgraph_dev")


class _Child:
    """A server process: its ``/v1``-style base URL and pid."""

    def __init__(self, command: list[str], env: dict[str, str], url: str, health: str, cwd: str | None = None) -> None:
        self.url = url
        self.process = subprocess.Popen(
            command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}{health}", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not start: {command[:4]}")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> str:
        """SIGTERM (a graceful shutdown), then SIGKILL after 30 s; returns its stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.stderr is not None
        errors = self.process.stderr.read().decode(errors="replace")
        self.process.stderr.close()
        return errors


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "bench", "NO_COLOR": "1"}
    env.pop("STELLATE_DB", None)
    return env


def _stellate(db_url: str, model: str, home: Path) -> _Child:
    port = _free_port()
    profile = os.environ.get("STELLATE_BENCH_PROFILE")
    launcher = ["-m", "bench.profiled", profile] if profile else ["-m", "stellate.cli"]
    command = [sys.executable, *launcher, "serve", "--db", db_url, "--port", str(port)]
    command += ["--provider", "openai", "--base-url", f"{model}/v1", "--model", "mock"]
    return _Child(command, _env(home), f"http://127.0.0.1:{port}/v1", "/health")


def _floor(db: str, model: str, home: Path) -> _Child:
    port = _free_port()
    command = [sys.executable, "-m", "bench.floor_app", db, str(port), f"{model}/v1"]
    return _Child(command, _env(home), f"http://127.0.0.1:{port}/v1", "/health")


LANGGRAPH_DEV_MISSING = (
    'langgraph dev not found: pip install "langgraph-cli[inmem]==0.4.40" langchain-openai in a virtualenv of its '
    "own (its langgraph-api pins jsonschema-rs<0.45, the dev extra's schemathesis needs >=0.60) and set "
    "$STELLATE_BENCH_LANGGRAPH to its bin/langgraph"
)


def langgraph_executable() -> str | None:
    """``langgraph`` (the CLI with its ``inmem`` extra), or None."""
    return os.environ.get("STELLATE_BENCH_LANGGRAPH") or shutil.which("langgraph")


def _langgraph(model: str, home: Path, jobs: int | None = None) -> _Child:
    """``langgraph dev`` at the mock; ``jobs``: its ``--n-jobs-per-worker`` (runs at once; its default is 10)."""
    executable = langgraph_executable()
    if executable is None:
        raise RuntimeError(LANGGRAPH_DEV_MISSING)
    port = _free_port()
    env = {**_env(home), "MOCK_BASE_URL": f"{model}/v1", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    env["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
    project = home.parent / "langgraph_dev"  # it keeps its in-memory state's files under the project folder
    shutil.copytree(_GRAPH, project, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api"))
    command = [executable, "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", "langgraph.json"]
    if jobs is not None:
        command += ["--n-jobs-per-worker", str(jobs)]
    return _Child(command, env, f"http://127.0.0.1:{port}", "/ok", cwd=str(project))


@contextmanager
def _servers(system: str, params: dict[str, Any], model: str) -> Iterator[list[_Child]]:
    """The system's server process(es), stopped afterwards."""
    home = Path(params["dir"]) / "home"
    home.mkdir(exist_ok=True)
    with ExitStack() as stack:
        children: list[_Child] = []
        stack.callback(lambda: [child.stop() for child in children])
        if system == "stellate" and params.get("db") == "pg":
            schema = params["schema"]  # the worker's throwaway schema (`bench.common.pg_schema`), dropped after
            _create_schema(schema)
            url = f"{PG_URL}?options=-csearch_path%3D{schema}"
            for _ in range(params.get("workers", 1)):  # one after the other: the first one migrates the schema
                children.append(_stellate(url, model, home))
        elif system == "stellate":
            children.append(_stellate(str(Path(params["dir"]) / "stellate.db"), model, home))
        elif system == "floor":
            children.append(_floor(str(Path(params["dir"]) / "floor.db"), model, home))
        elif system == "langgraph":
            children.append(_langgraph(model, home))
        else:
            raise ValueError(system)
        yield children


def _create_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


class _Api:
    """Sessions and turns of one system's API."""

    def __init__(self, system: str, http: httpx.AsyncClient) -> None:
        self.system, self.http = system, http

    async def session(self, label: str) -> str:
        if self.system == "langgraph":
            response = await self.http.post("/threads", json={"metadata": {"label": label}})
            response.raise_for_status()
            return str(response.json()["thread_id"])
        response = await self.http.post("/sessions", json={"label": label})
        response.raise_for_status()
        return str(response.json()["id"])

    async def turn(self, sid: str) -> float:
        start = time.perf_counter()
        if self.system == "langgraph":
            body = {"assistant_id": "chat", "input": {"messages": [{"role": "user", "content": USER}]}}
            response = await self.http.post(f"/threads/{sid}/runs/wait", json=body)
            elapsed = ms(time.perf_counter() - start)
            response.raise_for_status()
            content = response.json()["messages"][-1]["content"]
        else:
            response = await self.http.post(f"/sessions/{sid}/turns", json={"content": USER})
            elapsed = ms(time.perf_counter() - start)
            response.raise_for_status()
            content = response.json()["content"]
        assert content == REPLY, response.text
        return elapsed


async def turns(params: dict[str, Any]) -> dict[str, Any]:
    """C sessions x K timed turns through HTTP against ``params["system"]``, all sessions at once."""
    sessions, k, system = params["sessions"], params["turns"], params["system"]
    with mock_server_process(params["latency_ms"]) as model, _servers(system, params, model) as children:
        async with _clients(system, children, sessions) as apis:
            pairs = [(apis[n % len(apis)], await apis[n % len(apis)].session(f"s{n}")) for n in range(sessions)]
            await asyncio.gather(*(api.turn(sid) for api, sid in pairs))
            times: list[float] = []

            async def run(api: _Api, sid: str) -> None:
                for _ in range(k):
                    times.append(await api.turn(sid))

            _profile(children, signal.SIGUSR1)
            cpu, start = _cpu(children), time.perf_counter()
            await asyncio.gather(*(run(api, sid) for api, sid in pairs))
            wall, cpu = time.perf_counter() - start, _cpu(children) - cpu
            _profile(children, signal.SIGUSR2)
    assert len(times) == sessions * k
    return {
        "p50": {"ms": [median(times)]},
        "p99": {"ms": [quantile(times, 0.99)]},
        "rate": {"ms": [sessions * k / wall]},
        "cpu": {"ms": [ms(cpu) / (sessions * k)]},
    }


def _profile(children: list[_Child], sign: signal.Signals) -> None:
    """Turn the profiler of a profiled stellate worker on (SIGUSR1) or off (SIGUSR2): see `bench.profiled`."""
    if os.environ.get("STELLATE_BENCH_PROFILE") and children[0].url.endswith("/v1"):
        for child in children:
            os.kill(child.pid, sign)


def _cpu(children: list[_Child]) -> float:
    """CPU seconds the server processes (and their children: ``langgraph dev`` runs its server in one) used."""
    return sum(_cpu_seconds(pid) for child in children for pid in _tree(child.pid))


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            tasks = Path(f"/proc/{current}/task").iterdir()
            for task in tasks:
                todo += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


@asynccontextmanager
async def _clients(system: str, children: list[_Child], sessions: int) -> AsyncIterator[list[_Api]]:
    """One pooled client per server process."""
    async with AsyncExitStack() as stack:
        yield [_Api(system, await stack.enter_async_context(client(c.url, sessions + 4))) for c in children]
