"""A separate process for the live-session stress tests: runs turns, or writes slots and forks, for a while.

Usage: python live_worker.py STORE SESSION MODE SECONDS

STORE is ``sqlite:///path`` or ``postgresql://...#schema``. Modes:

- ``turns``: tool-round turns (the model calls a tool, then answers) back to back for SECONDS; prints
  ``DONE <turns> <failed>`` and one ``FAIL <code>`` line per failed turn.
- ``slots``: memory, insight and label writes (up to 600 a second in all) and forks (up to 40 a second), all
  at once, for SECONDS; prints ``WROTE <memory text>`` for every memory written, then ``DONE <writes> <failed> <forks>
  <failed forks>`` and one ``FAIL <what> <code>`` line per failure.
"""

from __future__ import annotations

import asyncio
import sys
import time

from lease_worker import open_for_test

from stellate import Agent, tool
from stellate.errors import StellateError
from stellate.llm.scripted import FunctionLLM, Reply, tool_call
from stellate.llm.types import LLMRequest
from stellate.store import BaseStore


@tool
async def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    await asyncio.sleep(0.002)
    return f"notes on {topic}"


def tool_model(request: LLMRequest) -> Reply:
    last = request.messages[-1]
    if last.role == "tool":
        return Reply(text="done with " + str(last.content)[:20])
    return Reply(tool_calls=[tool_call("lookup", {"topic": "live"})])


async def turns(store: BaseStore, session: str, seconds: float) -> None:
    agent = Agent(store, llm=FunctionLLM(tool_model), tools=[lookup], busy_timeout=30)
    done = failed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            result = await agent.turn(session, f"turn {done}")
            if result.reason != "completed":
                print(f"FAIL {result.reason}", flush=True)
                failed += 1
        except StellateError as exc:
            print(f"FAIL {exc.code}", flush=True)
            failed += 1
        done += 1
    print(f"DONE {done} {failed}", flush=True)


async def slots(store: BaseStore, session: str, seconds: float) -> None:
    agent = Agent(store, llm=FunctionLLM(tool_model), busy_timeout=0)
    counts = {"memory": 0, "insight": 0, "label": 0, "fork": 0}
    failed = {kind: 0 for kind in counts}
    deadline = time.monotonic() + seconds

    async def write(kind: str, n: int) -> None:
        if kind == "memory":
            await agent.put_memory(session, f"memory {n}")
            print(f"WROTE memory {n}", flush=True)
        elif kind == "insight":
            await agent.put_insight(session, f"insight {n}")
        elif kind == "label":
            await agent.rename_session(session, f"live {n}")
        else:
            await agent.fork_session(session, label=f"branch {n}", context="inherit")

    async def loop(kind: str, pause: float) -> None:
        while time.monotonic() < deadline:
            counts[kind] += 1
            try:
                await write(kind, counts[kind])
            except StellateError as exc:
                print(f"FAIL {kind} {exc.code}", flush=True)
                failed[kind] += 1
            await asyncio.sleep(pause)

    # Two writers per slot at up to 100 a second each and two forkers at up to 20 a second each, all at once.
    kinds = [("memory", 0.01), ("insight", 0.01), ("label", 0.01), ("fork", 0.05)] * 2
    await asyncio.gather(*(loop(kind, pause) for kind, pause in kinds))
    writes = counts["memory"] + counts["insight"] + counts["label"]
    failed_writes = failed["memory"] + failed["insight"] + failed["label"]
    print(f"DONE {writes} {failed_writes} {counts['fork']} {failed['fork']}", flush=True)


async def main(url: str, session: str, mode: str, seconds: float) -> None:
    store = await open_for_test(url)
    try:
        await {"turns": turns, "slots": slots}[mode](store, session, seconds)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
