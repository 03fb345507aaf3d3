"""A real uvicorn on 127.0.0.1 (random port, started and always stopped by each test).

What only a real server shows: SSE as it streams, disconnects, cancellation, resumption and shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn
from server_support import Keys, add, bearer, make_agent, running, sse

from stellate import Agent, tool
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.server import create_app
from stellate.store import BaseStore, SessionId

GATE: dict[str, asyncio.Event] = {}


@tool
async def wait_for_gate() -> str:
    """Wait until the test opens the gate."""
    await GATE["open"].wait()
    return "through"


@dataclass
class Live:
    url: str
    server: uvicorn.Server
    agent: Agent
    llm: ScriptedLLM


@pytest.fixture
async def live(store: BaseStore) -> AsyncIterator[Live]:
    GATE["open"] = asyncio.Event()
    llm = ScriptedLLM(default=lambda request: f"echo: {request.messages[-1].content}")
    agent = Agent(store, llm=llm, tools=[add, wait_for_gate])
    try:
        async with running(create_app(agent, shutdown_grace=0.2)) as (url, server):
            yield Live(url, server, agent, llm)
    finally:
        GATE["open"].set()


def gated_turn(llm: ScriptedLLM) -> None:
    llm.push(Reply(text="let me wait", tool_calls=[tool_call("wait_for_gate")]), "done waiting")


async def new_session(http: httpx.AsyncClient) -> str:
    return str((await http.post("/sessions", json={"label": "live"})).json()["id"])


async def last_event(http: httpx.AsyncClient, sid: str) -> dict[str, Any]:
    events: list[dict[str, Any]] = (await http.get(f"/sessions/{sid}/events", params={"limit": 1000})).json()["events"]
    return events[-1]


async def test_a_turn_streams_before_it_ends(live: Live) -> None:
    gated_turn(live.llm)
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        sid = await new_session(http)
        seen: list[str] = []
        headers = {"Accept": "text/event-stream"}
        async with http.stream("POST", f"/sessions/{sid}/turns", json={"content": "go"}, headers=headers) as response:
            async for name, _, data in sse(response):
                seen.append(name)
                if name == "tool_call":
                    assert "text" in seen and data["call"]["name"] == "wait_for_gate"
                    assert (await http.get(f"/sessions/{sid}")).json()["running"] is True
                    GATE["open"].set()
        assert seen[-1] == "turn_finished" and seen.count("round_start") == 2


async def test_a_client_that_disconnects_does_not_lose_the_turn(live: Live) -> None:
    gated_turn(live.llm)
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        sid = await new_session(http)
        headers = {"Accept": "text/event-stream"}
        async with http.stream("POST", f"/sessions/{sid}/turns", json={"content": "go"}, headers=headers) as response:
            async for name, _, _ in sse(response):
                if name == "tool_call":
                    break  # the client goes away mid-turn
        GATE["open"].set()
        for _ in range(500):
            if not (await http.get(f"/sessions/{sid}")).json()["running"]:
                break
            await asyncio.sleep(0.01)
        end = await last_event(http, sid)
        assert end["type"] == "turn/end" and end["data"]["reason"] == "completed"
        transcript = (await http.get(f"/sessions/{sid}/transcript")).json()
        assert transcript[-1]["content"] == "done waiting"


async def test_cancel_ends_the_stream_and_records_an_aborted_turn(live: Live) -> None:
    gated_turn(live.llm)
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        sid = await new_session(http)
        headers = {"Accept": "text/event-stream"}
        names = []
        async with http.stream("POST", f"/sessions/{sid}/turns", json={"content": "go"}, headers=headers) as response:
            async for name, _, data in sse(response):
                names.append(name)
                if name == "tool_call":
                    assert (await http.post(f"/sessions/{sid}/turns/current/cancel")).json()["cancelled"] is True
                if name == "problem":
                    assert data["code"] == "turn_cancelled"
        assert names[-1] == "problem"
        end = await last_event(http, sid)
        assert end["type"] == "turn/end" and end["data"]["reason"] == "aborted"


async def test_the_log_tail_resumes_after_last_event_id(live: Live) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        sid = await new_session(http)
        await http.post(f"/sessions/{sid}/turns", json={"content": "one"})
        seqs: list[int] = []
        async with http.stream("GET", f"/sessions/{sid}/events/stream") as response:
            async for _, event_id, data in sse(response):
                assert event_id == str(data["seq"])
                seqs.append(data["seq"])
                if len(seqs) == 4:
                    break
        assert seqs == [0, 1, 2, 3]
        await http.post(f"/sessions/{sid}/turns", json={"content": "two"})  # written while nobody watches
        resumed: list[dict[str, Any]] = []
        headers = {"Last-Event-ID": "3"}
        async with http.stream("GET", f"/sessions/{sid}/events/stream", headers=headers) as response:
            async for _, _, data in sse(response):
                resumed.append(data)
                if len(resumed) == 11:  # the rest of turn 1 and all of turn 2
                    await http.put(f"/sessions/{sid}/memory", json={"content": "live"})
                if data["type"] == "memory/put":
                    break
        assert [d["seq"] for d in resumed] == list(range(4, 16))
        assert resumed[-1]["data"]["content"] == "live"


async def test_space_events_arrive_live(live: Live) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        async with http.stream("GET", "/events", params={"types": "session_created,session_forked"}) as response:
            created = asyncio.create_task(_create_and_fork(http))
            names = []
            async for name, _, data in sse(response):
                names.append((name, data["label"]))
                if name == "session_forked":
                    break
            await created
        assert names == [("session_created", "live"), ("session_forked", "child")]


async def _create_and_fork(http: httpx.AsyncClient) -> None:
    await asyncio.sleep(0.2)  # the subscription is registered when the stream starts
    sid = await new_session(http)
    await http.post(f"/sessions/{sid}/forks", json={"label": "child"})


async def test_shutdown_aborts_a_running_turn_cleanly(live: Live) -> None:
    gated_turn(live.llm)
    async with httpx.AsyncClient(base_url=live.url, timeout=10) as http:
        sid = await new_session(http)
        turn = asyncio.create_task(http.post(f"/sessions/{sid}/turns", json={"content": "go"}))
        while not (await http.get(f"/sessions/{sid}")).json()["open_turn"]:
            await asyncio.sleep(0.01)
        live.server.should_exit = True
        with contextlib.suppress(httpx.HTTPError):
            await turn
    store = await live.agent.store()
    for _ in range(300):
        events = await store.read_events(SessionId(sid))
        if events[-1].type == "turn/end":
            break
        await asyncio.sleep(0.02)
    assert events[-1].type == "turn/end" and events[-1].data["reason"] == "aborted"


async def test_a_space_never_sees_another_spaces_events(store: BaseStore, keys: Keys) -> None:
    llm = ScriptedLLM(default="ok")
    app = create_app(
        make_agent(store, llm), spaces=lambda space: make_agent(store.in_space(space), llm), keys=keys.ring
    )
    async with running(app) as (url, _), httpx.AsyncClient(base_url=url, timeout=10) as http:
        alpha, beta = bearer(keys.alpha), bearer(keys.beta)
        seen: dict[str, list[str]] = {"alpha": [], "beta": []}

        async def watch(name: str, headers: dict[str, str]) -> None:
            async with http.stream("GET", "/events", headers=headers) as response:
                async for _, _, data in sse(response):
                    seen[name].append(data["label"])

        async def until_seen(name: str, label: str, tries: int = 500) -> None:
            for _ in range(tries):
                if label in seen[name]:
                    return
                await asyncio.sleep(0.01)

        watchers = [asyncio.create_task(watch("alpha", alpha)), asyncio.create_task(watch("beta", beta))]
        for name, headers in (("alpha", alpha), ("beta", beta)):  # each stream is live once it sees its own marker
            for _ in range(100):
                if f"{name}-ready" in seen[name]:
                    break
                await http.post("/sessions", json={"label": f"{name}-ready"}, headers=headers)
                await until_seen(name, f"{name}-ready", tries=20)  # a marker sent before it subscribed is lost
            assert f"{name}-ready" in seen[name], f"{name}'s stream never went live"
        await http.post("/sessions", json={"label": "alpha-secret"}, headers=alpha)
        await http.post("/sessions", json={"label": "beta-own"}, headers=beta)
        await until_seen("alpha", "alpha-secret")
        await until_seen("beta", "beta-own")
        await asyncio.sleep(0.1)
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    seen = {name: [label for label in labels if label != f"{name}-ready"] for name, labels in seen.items()}
    assert seen == {"alpha": ["alpha-secret"], "beta": ["beta-own"]}
