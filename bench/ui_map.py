"""Time to a usable star map for forests of 100 to 100,000 sessions, in Debian's chromium.

Usage: ``python -m bench.ui_map [--sizes 100,1000,10000,100000]``. Each size gets a fresh in-memory forest (one
root per 200 made by the agent, every other session forked from a random earlier one of its tree, its row
written through the store), served by the real app on 127.0.0.1, and a fresh browser page. "Usable" is the
moment the map first draws the forest after the page started loading (on a server that has answered one
request since it started) (its scripts, the forest's first page of
nodes fetched, laid out and painted; the rest streams in behind). "Whole" is the first paint of every session
(every page fetched, laid out and drawn). Also reported: one layout and one full repaint of the whole forest
(what a pan, a zoom or a live update costs) and one hit test (what hovering costs).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import statistics
import threading
import time
import urllib.request
from typing import Any

import uvicorn

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.log import make_event
from stellate.server import create_app
from stellate.store import Boundary, ForkRequest, SessionId
from stellate.testing.browser import CHROMIUM, CHROMIUM_FLAGS

MEASURE = """async () => {
  const map = window.stellate.map;
  const paints = [];
  for (let i = 0; i < 15; i += 1) {
    map.paint(performance.now());
    paints.push(map.paintMs);
  }
  const hits = [];
  for (let i = 0; i < 15; i += 1) {
    const t = performance.now();
    map.nodeAt(map.width * Math.random(), map.height * Math.random());
    hits.push(performance.now() - t);
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const nodes = map.positions.size;
  return {
    usable: map.firstPaintAt, whole: map.fullPaintAt ?? map.firstPaintAt, layout: map.layoutMs,
    paint: median(paints), hit: median(hits), nodes,
  };
}"""


# The first paint of every session (an older map, drawing the forest in one go, has only `firstPaintAt`).
WHOLE = """() => {
  const map = window.stellate.map;
  if (!map) return null;
  return map.fullPaintAt ?? (map.shownComplete === undefined ? map.firstPaintAt : undefined) ?? null;
}"""


async def grow(agent: Agent, size: int, seed: int = 7) -> None:
    """A forest of ``size`` sessions: one root per 200, the rest forked from random earlier sessions.

    The roots are the agent's; each fork is one row written through the store (a fork of its parent's first
    event with a label of its own), so 100,000 sessions take a minute, not 100,000 agent forks.
    """
    rng = random.Random(seed)
    store = await agent.store()
    trees: list[list[SessionId]] = []
    for index in range(max(1, size // 200)):
        trees.append([SessionId((await agent.create_session(label=f"Root {index}")).id)])
    for index in range(size - len(trees)):
        tree = trees[index % len(trees)]
        parent = tree[rng.randrange(len(tree))]
        fork = ForkRequest(source_id=parent, point=Boundary(seq=0))
        label = make_event("session/created", {"label": f"Branch {index}"})
        tree.append((await store.create_session(parent_id=parent, fork=fork, events=[label])).id)


class Served:
    """The app over an in-memory forest, on a real uvicorn in a thread."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=lambda: self.loop.run_until_complete(self._serve()), daemon=True)

    async def _serve(self) -> None:
        agent = Agent("memory://", llm=ScriptedLLM(default="ok"))
        await grow(agent, self.size)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(create_app(agent), log_level="warning"))
        task = asyncio.create_task(self.server.serve(sockets=[sock]))
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.ready.set()
        await task
        others = asyncio.all_tasks() - {asyncio.current_task()}
        for other in others:  # the event streams' shutdown watchers, the page's event streams
            other.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        sock.close()
        await agent.close()

    def __enter__(self) -> Served:
        self.thread.start()
        self.ready.wait(600)
        # A fresh server's first request builds its OpenAPI document (a second or two on this VM): that is the
        # server's start, paid once by whichever client comes first, not the map's; it is paid here.
        with urllib.request.urlopen(f"{self.url}/v1/info", timeout=60) as answer:
            answer.read()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(setattr, self.server, "should_exit", True)
        self.thread.join(30)
        self.loop.close()


def measure(browser: Any, url: str, size: int) -> dict[str, float]:
    """Open the map in a fresh page and read the page's own clocks."""
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{url}/#/map")
    page.wait_for_selector("body[data-ready=true]", timeout=120_000)
    deadline = time.monotonic() + 120
    while page.evaluate(WHOLE) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the map never painted")
        time.sleep(0.05)
    found: dict[str, float] = page.evaluate(MEASURE)
    page.context.close()
    if found["nodes"] != size:
        raise RuntimeError(f"the map placed {found['nodes']} sessions, not {size}")
    return found


def main() -> None:
    """Run every size and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print("| sessions | usable map (ms) | whole forest drawn (ms) | layout (ms) | full repaint (ms) | hit test (ms) |")
    print("|---:|---:|---:|---:|---:|---:|")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_FLAGS))
        for size in (int(s) for s in args.sizes.split(",")):
            with Served(size) as served:
                runs = [measure(browser, served.url, size) for _ in range(args.reps)]
            keys = ("usable", "whole", "layout", "paint", "hit")
            cell = {k: statistics.median(r[k] for r in runs) for k in keys}
            spread = f"{min(r['usable'] for r in runs):.0f}–{max(r['usable'] for r in runs):.0f}"
            print(
                f"| {size:,} | {cell['usable']:.0f} [{spread}] | {cell['whole']:.0f} | {cell['layout']:.1f}"
                f" | {cell['paint']:.1f} | {cell['hit']:.2f} |"
            )
        browser.close()


if __name__ == "__main__":
    main()
