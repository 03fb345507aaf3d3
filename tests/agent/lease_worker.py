"""A separate writer process for the lease tests: runs turns on one store, reports on stdout, exits with a code.

Usage: python lease_worker.py STORE SESSION MODE [ARG ...]

STORE is ``sqlite:///path`` or ``postgresql://...#schema``. Modes:

- ``hold REPLY_FILE TTL``: one turn whose model call waits until REPLY_FILE exists (prints ``IN-MODEL`` when
  it starts waiting), with a lease of TTL seconds; prints ``DONE <reason>`` or ``ERROR <code>``.
- ``turns N``: N turns in a row, each waiting for the session as long as it takes (prints ``DONE N``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from stellate import Agent
from stellate.errors import StellateError
from stellate.llm.scripted import FunctionLLM
from stellate.llm.types import LLMRequest
from stellate.store import BaseStore, open_store


async def open_for_test(url: str) -> BaseStore:
    if url.startswith("postgresql://"):
        from stellate.store.postgres import PostgresStore

        base, schema = url.split("#", 1)
        return await PostgresStore.open(base, schema=schema)
    return await open_store(url)


async def hold(store: BaseStore, session: str, reply_file: Path, ttl: float) -> None:
    async def slow_model(request: LLMRequest) -> str:
        print("IN-MODEL", flush=True)
        while not reply_file.exists():
            await asyncio.sleep(0.02)
        return "reply of the holder"

    agent = Agent(store, llm=FunctionLLM(slow_model), lease_ttl=ttl)
    try:
        result = await agent.turn(session, "question of the holder")
        print(f"DONE {result.reason}", flush=True)
    except StellateError as exc:
        print(f"ERROR {exc.code}", flush=True)
        raise SystemExit(75) from exc


async def turns(store: BaseStore, session: str, count: int) -> None:
    async def quick_model(request: LLMRequest) -> str:
        await asyncio.sleep(0.002)
        return "ok"

    agent = Agent(store, llm=FunctionLLM(quick_model), busy_timeout=90)
    for n in range(count):
        await agent.turn(session, f"turn {n}")
    print(f"DONE {count}", flush=True)


async def main(argv: list[str]) -> None:
    store = await open_for_test(argv[0])
    try:
        if argv[2] == "hold":
            await hold(store, argv[1], Path(argv[3]), float(argv[4]))
        else:
            await turns(store, argv[1], int(argv[3]))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
