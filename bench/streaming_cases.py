"""B10 (issue 22, goals 2 and 7): streaming turns one worker holds, and a bounded soak of one worker.

``capacity``: a model streaming ``chunks`` text chunks at ``rate`` per second (100 at 20/s: a five-second
answer). N sessions each run one streamed turn (``POST /sessions/{id}/turns``, ``Accept: text/event-stream``),
all at once. Each chunk carries the wall-clock time at which the model handed it to the server (the server
"receives" it); the client subtracts it from the time it reads the chunk: the added delay per chunk (p50,
p99), and the turns that failed. One process for the server (uvicorn, SQLite, `stellate.server`), one for the
clients; they share the machine's cores, so the client's own CPU use is reported too.

``soak``: one worker, T turns through C sessions and O stream opens and closes (the space's event stream and
session log tails), in rounds; the server's RSS after every round. Flat after warm-up means nothing grows
per turn or per stream.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bench.common import median
from bench.server_cases import _rss_kib, _session, client, quantile, serve_agent, served_process

USER = "stream, please"


class PacedLLM:
    """A stellate `LLMAdapter` streaming ``chunks`` text chunks at ``rate`` per second, each stamped with its time."""

    provider = "bench"
    model = "paced"
    max_context_tokens = 1 << 40

    def __init__(self, chunks: int, rate: float) -> None:
        self.chunks = chunks
        self.interval = 1 / rate

    async def complete(self, request: Any) -> Any:
        from stellate.llm.scripted import ResponseDone

        events = [e async for e in self.stream(request)]
        done = events[-1]
        assert isinstance(done, ResponseDone)
        return done.response

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from stellate.llm.types import LLMResponse, ResponseDone, TextDelta, Usage, UsageReport
        from stellate.log.messages import AssistantMessage

        loop = asyncio.get_running_loop()
        start, pieces = loop.time(), []
        for n in range(self.chunks):
            await asyncio.sleep(max(0.0, start + n * self.interval - loop.time()))
            piece = f"{time.time() * 1000:.3f};"
            pieces.append(piece)
            yield TextDelta(text=piece)
        usage = Usage(input_tokens=10, output_tokens=self.chunks)
        yield UsageReport(usage=usage)
        message = AssistantMessage(content="".join(pieces))
        yield ResponseDone(
            response=LLMResponse(message=message, usage=usage, stop_reason="stop", provider="bench", model="paced")
        )


def _serve_paced(chunks: int, rate: float, db: str, port: int) -> None:
    profile = os.environ.get("STELLATE_BENCH_PROFILE")  # a path: the server's cProfile stats, written at exit
    if not profile:
        asyncio.run(serve_agent(f"sqlite:///{db}", port, 0, llm=PacedLLM(chunks, rate)))
        return
    import cProfile
    import signal

    signal.signal(signal.SIGTERM, lambda *_: None)  # uvicorn raises the SIGTERM it caught again once it stopped
    with cProfile.Profile() as profiler:
        asyncio.run(serve_agent(f"sqlite:///{db}", port, 0, llm=PacedLLM(chunks, rate)))
    profiler.dump_stats(profile)


class Turn:
    """One streamed turn as its client saw it: each chunk's added delay (ms) and the wait for the first chunk.

    Every chunk's text is the model's ``<wall-clock ms>;`` stamp; a relayed piece may hold several.
    """

    def __init__(self, delays: list[float], waits: list[float]) -> None:
        self.delays, self.waits, self.read = delays, waits, 0
        self.start = time.perf_counter()

    def chunk(self, text: str) -> None:
        now = time.time() * 1000
        if self.read == 0:
            self.waits.append((time.perf_counter() - self.start) * 1000)
        for stamp in text.split(";"):
            if stamp:
                self.delays.append(now - float(stamp))
                self.read += 1


async def stellate_turn(http: httpx.AsyncClient, sid: str, turn: Turn) -> int:
    """One streamed turn through stellate's REST API; returns the chunks read."""
    headers = {"Accept": "text/event-stream"}
    async with http.stream("POST", f"/sessions/{sid}/turns", json={"content": USER}, headers=headers) as response:
        response.raise_for_status()
        event = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "text":
                turn.chunk(line.split('"text":"', 1)[1].split('"', 1)[0])  # cheaper than json.loads per chunk
            elif line.startswith("data:") and event == "problem":
                raise RuntimeError(line)
    return turn.read


async def capacity(params: dict[str, Any]) -> dict[str, Any]:
    """N concurrent streamed turns of ``chunks`` chunks at ``rate``/s: added delay per chunk, errors."""
    n, chunks, rate = params["turns"], params["chunks"], params["rate"]
    target = functools.partial(_serve_paced, chunks, rate)
    with served_process(params["dir"], 0, target=target) as (url, pid):
        async with client(url, n + 4) as http:
            ids = [await _session(http, f"s{k}") for k in range(n)]
            delays: list[float] = []
            cpu, wall, served = time.process_time(), time.perf_counter(), _cpu_seconds(pid)
            turns = (stellate_turn(http, sid, Turn(delays, [])) for sid in ids)
            results = await asyncio.gather(*turns, return_exceptions=True)
            cpu, wall, served = time.process_time() - cpu, time.perf_counter() - wall, _cpu_seconds(pid) - served
    errors = sum(1 for r in results if isinstance(r, BaseException) or r != chunks)
    return {
        "p50": {"ms": [median(delays) if delays else float("nan")]},
        "p99": {"ms": [quantile(delays, 0.99) if delays else float("nan")]},
        "errors": {"ms": [float(errors)]},
        "client_cpu": {"ms": [100 * cpu / wall]},
        "server_cpu": {"ms": [served * 1e6 / max(1, len(delays))]},
    }


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def soak(params: dict[str, Any]) -> dict[str, Any]:
    """Rounds of turns and stream opens/closes through one worker: its RSS (KiB) after each round."""
    rounds, sessions = params["rounds"], params["sessions"]
    turns_per_round, streams_per_round = params["turns"], params["streams"]
    with served_process(params["dir"], 0) as (url, pid):
        async with client(url, sessions + streams_per_round + 4) as http:
            ids = [await _session(http, f"soak-{k}") for k in range(sessions)]
            rss: list[float] = []
            for _ in range(rounds):
                for start in range(0, turns_per_round, sessions):
                    batch = ids[: min(sessions, turns_per_round - start)]
                    await asyncio.gather(*(_plain_turn(http, sid) for sid in batch))
                for start in range(0, streams_per_round, 50):
                    count = min(50, streams_per_round - start)
                    await asyncio.gather(*(_open_close(http, ids[k % sessions], k) for k in range(count)))
                await asyncio.sleep(0.2)
                rss.append(_rss_kib(pid))
    warm = max(1, len(rss) // 4)  # the first quarter is warm-up
    growth = (rss[-1] - rss[warm - 1]) / max(1, len(rss) - warm)
    return {
        "warm": {"ms": [rss[warm - 1] / 1024]},
        "end": {"ms": [rss[-1] / 1024]},
        "growth": {"ms": [growth]},
        "series": rss,
    }


async def _plain_turn(http: httpx.AsyncClient, sid: str) -> None:
    response = await http.post(f"/sessions/{sid}/turns", json={"content": USER})
    response.raise_for_status()


async def _open_close(http: httpx.AsyncClient, sid: str, k: int) -> None:
    """Open a stream, read its first bytes, close it: the space's events or one session's log tail."""
    path = "/events" if k % 2 else f"/sessions/{sid}/events/stream"
    async with http.stream("GET", path) as response:
        response.raise_for_status()
        if k % 2 == 0:  # a log tail sends the log at once; the space's stream has nothing yet: close either way
            async for _ in response.aiter_bytes():
                break
