"""B7: several server processes on one PostgreSQL — throughput, latency and fan-out between workers.

Each worker is a real `stellate.server` (uvicorn) in a child process with a mock model answering in 50 ms, all
on one throwaway PostgreSQL schema. ``turns``: C sessions spread over W workers (session i always through
worker i mod W), K timed turns each, all sessions at once: per-turn latency (p50, p99) and turns per second.
``fanout``: a client tails one session's log (SSE) on worker 0 while its turns run through worker 1: the time
from each ``turn/end`` being written on worker 1 to its arrival through worker 0 (p50, p99).
Loopback only; bounded. Run it with ``python -m bench.workers [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from bench.common import median, ms
from bench.server_cases import USER, _free_port, quantile, serve_agent, wait_until_healthy

PG_URL = os.environ.get("STELLATE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
LATENCY_MS = 50


def _serve(schema: str, port: int) -> None:
    asyncio.run(_serve_async(schema, port))


async def _serve_async(schema: str, port: int) -> None:
    from stellate.store.postgres import PostgresStore

    store = await PostgresStore.open(PG_URL, schema=schema, max_size=20)
    try:
        await serve_agent(store, port, LATENCY_MS, busy_timeout=120)
    finally:
        await store.close()


@contextmanager
def workers(count: int) -> Iterator[list[str]]:
    """``count`` servers on one fresh schema; yields their ``/v1`` URLs; drops the schema afterwards."""
    import psycopg
    from psycopg import sql

    schema = f"stellate_bench_{uuid.uuid4().hex[:10]}"
    ports = [_free_port() for _ in range(count)]
    spawn = multiprocessing.get_context("spawn")
    children = []
    try:
        for port in ports:  # one after the other: the first one creates the schema
            child = spawn.Process(target=_serve, args=(schema, port), daemon=True)
            child.start()
            children.append(child)
            wait_until_healthy(f"http://127.0.0.1:{port}/v1", child)
        yield [f"http://127.0.0.1:{port}/v1" for port in ports]
    finally:
        for child in children:
            child.terminate()
            child.join(30)
            if child.is_alive():
                child.kill()
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


async def _turn(http: httpx.AsyncClient, url: str, sid: str) -> float:
    start = time.perf_counter()
    response = await http.post(f"{url}/sessions/{sid}/turns", params={"wait": "true"}, json={"content": USER})
    elapsed = ms(time.perf_counter() - start)
    response.raise_for_status()
    return elapsed


async def turns(worker_count: int, sessions: int, per_session: int) -> dict[str, float]:
    """Per-turn latency and throughput with C sessions spread over W workers."""
    with workers(worker_count) as urls:
        limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
        async with httpx.AsyncClient(limits=limits, timeout=300) as http:
            ids = []
            for n in range(sessions):
                response = await http.post(f"{urls[n % worker_count]}/sessions", json={"label": f"s{n}"})
                ids.append(str(response.json()["id"]))
            await asyncio.gather(*(_turn(http, urls[n % worker_count], sid) for n, sid in enumerate(ids)))
            times: list[float] = []

            async def run(n: int, sid: str) -> None:
                for _ in range(per_session):
                    times.append(await _turn(http, urls[n % worker_count], sid))

            start = time.perf_counter()
            await asyncio.gather(*(run(n, sid) for n, sid in enumerate(ids)))
            wall = time.perf_counter() - start
    return {"p50": median(times), "p99": quantile(times, 0.99), "rate": sessions * per_session / wall}


async def fanout(events: int) -> dict[str, float]:
    """Delay from a ``turn/end`` written on worker 1 to its arrival on worker 0's tail of the session log (SSE)."""
    with workers(2) as (watched, runner):
        async with httpx.AsyncClient(timeout=120) as http:
            sid = str((await http.post(f"{runner}/sessions", json={"label": "fanout"})).json()["id"])
            delays: list[float] = []
            reader = asyncio.create_task(_read_turn_ends(http, watched, sid, delays))
            for _ in range(events):
                await _turn(http, runner, sid)
            while len(delays) < events:
                await asyncio.sleep(0.01)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
    return {"p50": median(delays), "p99": quantile(delays, 0.99)}


async def _read_turn_ends(http: httpx.AsyncClient, url: str, sid: str, delays: list[float]) -> None:
    async with http.stream("GET", f"{url}/sessions/{sid}/events/stream") as response:
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                if event["type"] == "turn/end":  # its time is when the writer made it, just before its commit
                    delays.append(time.time() * 1000 - event["time"])


async def main(quick: bool) -> None:
    sizes = [(1, 10), (2, 10)] if quick else [(1, 10), (2, 10), (1, 100), (2, 100)]
    per_session = 3 if quick else 10
    print(f"B7 — turns through W workers on one PostgreSQL, mock model {LATENCY_MS} ms, {per_session} turns/session")
    print("| workers | sessions | p50 ms | p99 ms | turns/s |")
    print("|---|---|---|---|---|")
    for worker_count, sessions in sizes:
        row = await turns(worker_count, sessions, per_session)
        print(f"| {worker_count} | {sessions} | {row['p50']:.0f} | {row['p99']:.0f} | {row['rate']:.1f} |")
    spread = await fanout(10 if quick else 50)
    print(f"\nfan-out, turn/end written on worker 1 -> worker 0's log tail (SSE): p50 {spread['p50']:.1f} ms,", end="")
    print(f" p99 {spread['p99']:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    asyncio.run(main(parser.parse_args().quick))
