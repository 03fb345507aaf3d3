"""B4-page: the session listing and the forest of a big forest, one page at a time (issue 22, goal 5).

One process builds a SQLite forest of S sessions through the store (a root per 100, the rest its forks), then
times each stellate read beside a bare ``SELECT`` of the same columns on a plain ``sqlite3`` connection,
alternated call by call so both see the same machine load:

- ``first``: the first page (100 digests), `Agent.list_session_digests_page`;
- ``middle``: the page after the session at S/2;
- ``walk``: the whole listing through pages of 1,000;
- ``topology``: the whole forest through `Agent.get_topology_page` pages of 1,000 (the floor runs the same
  query: the node's columns, its inherited turns extracted from the cursor's JSON by SQLite);
- ``http_first``: ``GET /v1/sessions?limit=100`` through the app in-process (diagnostic: the HTTP layer's cost).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from bench.common import ms
from bench.fakes import InstantLLM
from bench.stellate_cases import Backend, _forest
from stellate.agent.agent import Agent
from stellate.store._listing_sql import Listed, page_sql
from stellate.store.base import DEFAULT_SPACE
from stellate.store.types import SessionId

PAGE = 100
WALK_PAGE = 1000


def _raw_page(conn: sqlite3.Connection, after: str | None, limit: int, listed: Listed = "digests") -> list[Any]:
    sql, params = page_sql(
        placeholder="?", space=DEFAULT_SPACE, after=SessionId(after) if after else None, limit=limit, listed=listed
    )
    return conn.execute(sql, params).fetchall()


def _raw_walk(conn: sqlite3.Connection, listed: Listed = "digests") -> int:
    count, after = 0, None
    while rows := _raw_page(conn, after, WALK_PAGE, listed):
        count += len(rows)
        after = rows[-1][0]
    return count


async def _walk(fetch: Callable[[str | None, int], Awaitable[list[Any]]]) -> int:
    count, after = 0, None
    while page := await fetch(after, WALK_PAGE):
        count += len(page)
        after = page[-1].id
    return count


async def b4_page(params: dict[str, Any]) -> dict[str, Any]:
    """Each read of a forest of S sessions, stellate's and the bare SELECT's, alternated ``runs`` times."""
    sessions, runs = params["sessions"], params["runs"]
    backend = Backend(params)
    store = await backend.open()
    await _forest(store, sessions, params.get("per_root", 100))
    await store.close()
    store = await backend.open()
    agent = Agent(store, llm=InstantLLM())
    conn = sqlite3.connect(str(Path(params["dir"]) / "stellate.db"))
    middle = (await agent.list_session_digests_page(limit=sessions // 2))[-1].id if sessions > 1 else None

    async def digests(after: str | None, n: int) -> list[Any]:
        return await agent.list_session_digests_page(after=after, limit=n)

    async def nodes(after: str | None, n: int) -> list[Any]:
        return await agent.get_topology_page(after=after, limit=n)

    from stellate.server import create_app

    http = httpx.AsyncClient(transport=httpx.ASGITransport(create_app(agent)), base_url="http://127.0.0.1/v1")
    ours: dict[str, Callable[[], Awaitable[Any]]] = {
        "first": lambda: agent.list_session_digests_page(limit=PAGE),
        "middle": lambda: agent.list_session_digests_page(after=middle, limit=PAGE),
        "walk": lambda: _walk(digests),
        "topology": lambda: _walk(nodes),
        "http_first": lambda: http.get("/sessions", params={"limit": PAGE}),
    }
    floors: dict[str, Callable[[], Any]] = {
        "first": lambda: _raw_page(conn, None, PAGE),
        "middle": lambda: _raw_page(conn, middle, PAGE),
        "walk": lambda: _raw_walk(conn),
        "topology": lambda: _raw_walk(conn, "nodes"),
        "http_first": lambda: _raw_page(conn, None, PAGE + 1),
    }
    assert await _walk(digests) == sessions == _raw_walk(conn)
    assert await _walk(nodes) == sessions
    out: dict[str, dict[str, list[float]]] = {}
    for name, call in ours.items():
        mine, raw = out.setdefault(name, {"ms": []}), out.setdefault(f"{name}_raw", {"ms": []})
        for _ in range(max(runs, 5)):
            start = time.perf_counter()
            await call()
            mine["ms"].append(ms(time.perf_counter() - start))
            start = time.perf_counter()
            floors[name]()
            raw["ms"].append(ms(time.perf_counter() - start))
    await http.aclose()
    conn.close()
    await agent.close()
    await store.close()
    return out
