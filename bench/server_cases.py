"""B6: stellate through HTTP — a real `stellate.server` (uvicorn) in a child process, a mock model of fixed latency.

B6's turns (each system's server and the model in processes of their own) are in `bench.serve_cases`.
``b6_streams``: N clients hold the space's event stream (SSE) open; each
new session's event must reach all of them: time to open the streams, and delivery latency (p50, p99); and
what idle streams cost the server: its RSS growth per open stream, what stays after they close, and the
growth when N streams open again (memory kept by the allocator is reused, not leaked).
Loopback only; the server and the client are separate processes sharing the machine's cores.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import median, ms

USER = "next step, please"


def _serve(db: str, port: int, latency_ms: float) -> None:
    """The child process: a server over a SQLite file whose model answers after ``latency_ms``."""
    asyncio.run(_serve_async(db, port, latency_ms))


async def _serve_async(db: str, port: int, latency_ms: float) -> None:
    await serve_agent(f"sqlite:///{db}", port, latency_ms)


async def serve_agent(store: Any, port: int, latency_ms: float, llm: Any = None, **agent_options: Any) -> None:
    """Serve an agent on ``store`` (a store or its URL) whose model answers after ``latency_ms``, until stopped.

    ``llm``: another model instead (``latency_ms`` is then unused).
    """
    import uvicorn

    from bench.fakes import DelayedLLM
    from stellate import Agent
    from stellate.server import create_app
    from stellate.server.serving import uvicorn_config

    async with Agent(store, llm=llm or DelayedLLM(latency_ms), **agent_options) as agent:
        # One client process holds every stream: the per-client cap would refuse past 32.
        app = create_app(agent, max_streams_per_client=100_000, max_streams_per_space=100_000)
        # As `stellate serve` runs it (header deadline, 75 s keep-alive).
        config = uvicorn_config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
        await uvicorn.Server(config).serve()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def served(directory: str, latency_ms: float) -> Iterator[str]:
    """A server in a child process for the duration of the block; yields its ``/v1`` URL."""
    with served_process(directory, latency_ms) as (url, _):
        yield url


@contextmanager
def served_process(
    directory: str, latency_ms: float, target: Callable[[str, int], None] | None = None
) -> Iterator[tuple[str, int]]:
    """A server in a child process for the duration of the block; yields its ``/v1`` URL and its pid.

    ``target(db, port)``: another server function to run in the child (a picklable module-level callable).
    """
    port = _free_port()
    db = str(Path(directory) / "server.db")
    spawn = multiprocessing.get_context("spawn")
    if target is None:
        child = spawn.Process(target=_serve, args=(db, port, latency_ms), daemon=True)
    else:
        child = spawn.Process(target=target, args=(db, port), daemon=True)
    child.start()
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_healthy(url, child)
        assert child.pid is not None
        yield url, child.pid
    finally:
        child.terminate()  # SIGTERM: uvicorn's graceful shutdown
        child.join(30)
        if child.is_alive():
            child.kill()


def wait_until_healthy(url: str, child: Any) -> None:
    """Return once the server at ``url`` answers its health check; raise if its process dies or a minute passes."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or not child.is_alive():
            raise RuntimeError("the benchmark server did not start")
        time.sleep(0.05)


@asynccontextmanager
async def client(url: str, connections: int) -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        yield http


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _session(http: httpx.AsyncClient, label: str) -> str:
    response = await http.post("/sessions", json={"label": label})
    response.raise_for_status()
    return str(response.json()["id"])


async def b6_streams(params: dict[str, Any]) -> dict[str, Any]:
    """N held SSE streams of the space's events; M new sessions, each event timed until all N have it."""
    streams, events = params["streams"], params["events"]
    with served_process(params["dir"], params["latency_ms"]) as (url, pid):
        async with client(url, streams + 4) as http:
            await _hold(http, 1)  # one stream first: what the first one costs once (imports, caches) is not per stream
            base = _rss_kib(pid)
            seen: dict[str, list[float]] = {}
            start = time.perf_counter()
            readers = await _hold(http, streams, seen)
            opened = ms(time.perf_counter() - start) / streams
            held = _rss_kib(pid)
            delays: list[float] = []
            for n in range(events):
                label = f"event-{n}"
                seen[label] = []
                sent = time.perf_counter()
                await _session(http, label)
                while len(seen[label]) < streams:
                    await asyncio.sleep(0.001)
                delays += [ms(at - sent) for at in seen[label]]
            await _release(http, readers)
            closed = _rss_kib(pid)
            await _release(http, await _hold(http, streams))
            reopened = _rss_kib(pid) - closed
    # RSS moves by whole pages and may shrink: a negative growth is none.
    grown = {"held": held - base, "closed": closed - base, "reopened": reopened}
    per = {key: max(kib, 0.0) / streams for key, kib in grown.items()}
    return {
        "open": {"ms": [opened]},
        "p50": {"ms": [median(delays)]},
        "p99": {"ms": [quantile(delays, 0.99)]},
        **{key: {"ms": [value]} for key, value in per.items()},
    }


def _rss_kib(pid: int) -> float:
    """The resident memory of process ``pid`` (Linux), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    raise RuntimeError("no VmRSS in /proc: the idle-stream rows need Linux")


async def _hold(
    http: httpx.AsyncClient, streams: int, seen: dict[str, list[float]] | None = None
) -> list[asyncio.Task[None]]:
    """``streams`` readers of the space's events, returned once every one of them is live."""
    seen = {} if seen is None else seen
    ready = [asyncio.Event() for _ in range(streams)]
    readers = [asyncio.create_task(_read(http, seen, ready[n])) for n in range(streams)]
    while not all(r.is_set() for r in ready):  # a probe until every stream has one: all are live
        await _session(http, "probe")
        await asyncio.sleep(0.05)
    return readers


async def _release(http: httpx.AsyncClient, readers: list[asyncio.Task[None]]) -> None:
    """Close the streams, and give the server the time to see it (a second, and a request)."""
    for reader in readers:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await asyncio.sleep(1)
    (await http.get("/health")).raise_for_status()


async def _read(http: httpx.AsyncClient, seen: dict[str, list[float]], ready: asyncio.Event) -> None:
    async with http.stream("GET", "/events", params={"types": "session_created"}) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            ready.set()
            label = line.split('"label":"', 1)[1].split('"', 1)[0]
            if label in seen:
                seen[label].append(time.perf_counter())
