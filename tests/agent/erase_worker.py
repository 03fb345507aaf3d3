"""A separate process for the erase tests: races turns, slot writes and forks against erases, or runs one erase.

Usage: python erase_worker.py STORE MODE ARGS...

STORE is ``sqlite:///path`` or ``postgresql://...#schema``. Modes:

- ``race SECONDS ID...``: turns, memory writes and forks on the given sessions, all at once, until every one of
  them is gone (or SECONDS pass). Prints ``READY`` once the first turn completed, ``GONE <what> <code>`` for an
  operation refused because its session was erased, ``FAIL <what> <code>`` for any other failure, and
  ``DONE <completed operations> <gone>`` at the end.
- ``erase DEPENDENTS ID...``: prints ``ERASING`` and erases the sessions (the test kills it meanwhile), then
  ``ERASED``.
"""

from __future__ import annotations

import asyncio
import sys
import time

from lease_worker import open_for_test

from stellate import Agent
from stellate.errors import StellateError
from stellate.llm.scripted import ScriptedLLM
from stellate.store import BaseStore, SessionId

GONE_CODES = frozenset({"session_not_found", "source_not_found"})


async def race(store: BaseStore, seconds: float, ids: list[str]) -> None:
    agent = Agent(store, llm=ScriptedLLM(default="an answer"), busy_timeout=30)
    live = set(ids)
    counts = {"done": 0, "gone": 0}
    ready = asyncio.Event()

    async def run(what: str, sid: str) -> None:
        try:
            if what == "turn":
                await agent.turn(sid, "again")
                ready.set()
            elif what == "memory":
                await agent.put_memory(sid, f"memory of {sid}")
            else:
                await agent.fork_session(sid, label="racing fork", context="inherit")
            counts["done"] += 1
        except StellateError as exc:
            if exc.code not in GONE_CODES:
                print(f"FAIL {what} {exc.code} {exc}", flush=True)
                return
            print(f"GONE {what} {exc.code}", flush=True)
            counts["gone"] += 1
            live.discard(sid)

    async def keep_going(what: str) -> None:
        while live and time.monotonic() < deadline:
            await asyncio.gather(*(run(what, sid) for sid in sorted(live)))

    deadline = time.monotonic() + seconds
    reporter = asyncio.create_task(_report_ready(ready))
    await asyncio.gather(keep_going("turn"), keep_going("memory"), keep_going("fork"))
    reporter.cancel()
    await agent.close()
    print(f"DONE {counts['done']} {counts['gone']}", flush=True)


async def _report_ready(ready: asyncio.Event) -> None:
    await ready.wait()
    print("READY", flush=True)


async def erase(store: BaseStore, dependents: str, ids: list[str]) -> None:
    print("ERASING", flush=True)
    await store.erase_sessions([SessionId(s) for s in ids], dependents=dependents, by="worker")  # type: ignore[arg-type]
    print("ERASED", flush=True)


async def main(url: str, mode: str, args: list[str]) -> None:
    store = await open_for_test(url)
    try:
        if mode == "race":
            await race(store, float(args[0]), args[1:])
        else:
            await erase(store, args[0], args[1:])
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
