"""B10-peer (issue 22, goal 2): streamed turns one worker holds, stellate beside a peer, the model over HTTP.

Both servers run as their users run them, each in its own process, and call the same paced model
(`bench.paced_mock`, a process of its own: 100 chunks at 20 per second, each stamped with the time the model
wrote it) through their real OpenAI clients:

- ``stellate``: ``stellate serve`` (SQLite, one worker, ``--provider openai --base-url`` the mock); a turn is
  ``POST /v1/sessions/{id}/turns`` with ``Accept: text/event-stream``, its chunks ``text`` events.
- ``langgraph``: ``langgraph dev`` (in-memory runtime, one worker, ``--n-jobs-per-worker N`` so every run starts
  at once instead of ten at a time) serving `bench/langgraph_dev`'s graph (one node, a ``ChatOpenAI`` at the
  mock); a turn is ``POST /threads/{id}/runs/stream`` with ``stream_mode: messages-tuple``, its chunks
  ``messages`` events.

N sessions each run one streamed turn, all at once. Per row: the added delay per chunk (the model wrote it →
the client read it; p50, p99), how long a turn waited for its first chunk (p99), the turns that failed, the load
generator's CPU and the server's CPU per chunk. Capacity is the largest N with p99 ≤ 250 ms and no failed turn.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import median
from bench.paced_mock import paced_mock_process
from bench.serve_cases import _cpu, _langgraph, _stellate
from bench.server_cases import client, quantile
from bench.streaming_cases import USER, Turn, stellate_turn


async def _langgraph_turn(http: httpx.AsyncClient, sid: str, turn: Turn) -> int:
    body = {
        "assistant_id": "chat",
        "input": {"messages": [{"role": "user", "content": USER}]},
        "stream_mode": ["messages-tuple"],
    }
    async with http.stream("POST", f"/threads/{sid}/runs/stream", json=body) as response:
        response.raise_for_status()
        event = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event == "messages":
                message = json.loads(line[5:])[0]
                if message.get("type") in ("AIMessageChunk", "ai") and message.get("content"):
                    turn.chunk(message["content"])
            elif line.startswith("data:") and event == "error":
                raise RuntimeError(line)
    return turn.read


async def _session(system: str, http: httpx.AsyncClient, label: str) -> str:
    if system == "langgraph":
        response = await http.post("/threads", json={"metadata": {"label": label}})
        response.raise_for_status()
        return str(response.json()["thread_id"])
    response = await http.post("/sessions", json={"label": label})
    response.raise_for_status()
    return str(response.json()["id"])


async def capacity(params: dict[str, Any]) -> dict[str, Any]:
    """N streamed turns at once through ``params["system"]``'s server, the paced model over HTTP."""
    n, chunks, system = params["turns"], params["chunks"], params["system"]
    home = Path(params["dir"]) / "home"
    home.mkdir(exist_ok=True)
    with paced_mock_process(chunks, params["rate"]) as (model, _):
        if system == "langgraph":
            server = _langgraph(model, home, jobs=n)
        else:
            server = _stellate(str(Path(params["dir"]) / "stellate.db"), model, home)
        try:
            async with client(server.url, n + 4) as http:
                one = _langgraph_turn if system == "langgraph" else stellate_turn
                warm = await _session(system, http, "warm-up")
                await one(http, warm, Turn([], []))  # the first turn's imports and caches are not per turn
                ids = [await _session(system, http, f"s{k}") for k in range(n)]
                delays: list[float] = []
                waits: list[float] = []
                cpu, wall, served = time.process_time(), time.perf_counter(), _cpu([server])
                turns = (one(http, sid, Turn(delays, waits)) for sid in ids)
                results = await asyncio.gather(*turns, return_exceptions=True)
                cpu, wall, served = time.process_time() - cpu, time.perf_counter() - wall, _cpu([server]) - served
        finally:
            server.stop()
    errors = sum(1 for r in results if isinstance(r, BaseException) or r != chunks)
    return {
        "p50": {"ms": [median(delays) if delays else float("nan")]},
        "p99": {"ms": [quantile(delays, 0.99) if delays else float("nan")]},
        "first": {"ms": [quantile(waits, 0.99) if waits else float("nan")]},
        "errors": {"ms": [float(errors)]},
        "client_cpu": {"ms": [100 * cpu / wall]},
        "server_cpu": {"ms": [served * 1e6 / max(1, len(delays))]},
    }
