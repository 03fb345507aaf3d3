"""``/v1/events`` with ids and history: resume by ``Last-Event-ID``, the ``reset`` event, the history pages, and
streams that wait out an unavailable store (on a real uvicorn, over SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from server_support import Keys, bearer, make_agent, running, sse

from stellate import Agent
from stellate.errors import StoreError
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.history_fanout import listening
from stellate.store import BaseStore, SessionId
from stellate.store.history import EventHistory, HistoryBounds, NewHistoryEntry
from stellate.testing.contract_support import turn

Event = tuple[str, str | None, dict[str, Any]]


@pytest.fixture
async def served(store: BaseStore) -> AsyncIterator[tuple[httpx.AsyncClient, Agent]]:
    agent = make_agent(store, ScriptedLLM(default=lambda request: f"echo: {request.messages[-1].content}"))
    async with running(create_app(agent)) as (url, _), httpx.AsyncClient(base_url=url, timeout=20) as http:
        yield http, agent


async def collect(response: httpx.Response, into: list[Event], until: Callable[[list[Event]], bool]) -> None:
    async for event in sse(response):
        into.append(event)
        if until(into):
            return


async def create(http: httpx.AsyncClient, label: str, headers: dict[str, str] | None = None) -> str:
    response = await http.post("/sessions", json={"label": label}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_space_events_carry_history_ids_and_resume_after_last_event_id(
    served: tuple[httpx.AsyncClient, Agent],
) -> None:
    """Each kept event has its history id as SSE id; a reconnect with Last-Event-ID gets what it missed, in order."""
    http, agent = served
    seen: list[Event] = []
    async with http.stream("GET", "/events", params={"types": "session_created"}) as response:
        reading = asyncio.create_task(collect(response, seen, lambda got: len(got) == 1))
        await asyncio.sleep(0.2)  # the stream has read the head
        await create(http, "one")
        await asyncio.wait_for(reading, 10)
    (name, first_id, data) = seen[0]
    assert name == "session_created" and data["label"] == "one" and first_id is not None
    await create(http, "two")  # while nobody watches
    await create(http, "three")
    await agent.events_recorded()
    resumed: list[Event] = []
    headers = {"Last-Event-ID": first_id}
    async with http.stream("GET", "/events", params={"types": "session_created"}, headers=headers) as response:
        await asyncio.wait_for(collect(response, resumed, lambda got: len(got) == 2), 10)
    assert [(d["label"], i) for _, i, d in resumed] == [
        ("two", str(int(first_id) + 1)),
        ("three", str(int(first_id) + 2)),
    ]


async def test_a_last_event_id_older_than_the_history_gets_a_reset_then_live_events(
    served: tuple[httpx.AsyncClient, Agent],
) -> None:
    """Missed events that were pruned are announced by a ``reset`` event (id = the newest), then the stream goes on."""
    http, agent = served
    store = await agent.store()
    assert isinstance(store, EventHistory)
    store.history_bounds = HistoryBounds(max_entries=2)
    for n in range(5):
        await create(http, f"s{n}")
    await agent.events_recorded()
    last_id = (await store.read_history(limit=0)).last_id
    for sent_id, reason in (("1", "history_gap"), (str(last_id + 50), "unknown_id")):
        got: list[Event] = []
        async with http.stream("GET", "/events", headers={"Last-Event-ID": sent_id}) as response:
            reading = asyncio.create_task(collect(response, got, lambda events: events[-1][0] == "session_created"))
            await asyncio.sleep(0.2)
            await create(http, "after the reset")
            await asyncio.wait_for(reading, 10)
        assert got[0][0] == "reset" and got[0][1] == str(last_id)
        assert got[0][2] == {"reason": reason, "after": int(sent_id), "last_id": last_id}
        assert got[-1][2]["label"] == "after the reset" and got[-1][1] == str(last_id + 1)
        last_id += 1


async def test_text_chunks_come_between_their_turns_kept_events_without_ids(
    served: tuple[httpx.AsyncClient, Agent],
) -> None:
    """A turn's message_received comes before its text chunks, turn_finished after; text chunks carry no id."""
    http, _ = served
    sid = await create(http, "talk")
    got: list[Event] = []
    params = {"types": "message_received,text,turn_finished"}
    async with http.stream("GET", "/events", params=params) as response:
        reading = asyncio.create_task(collect(response, got, lambda events: events[-1][0] == "turn_finished"))
        await asyncio.sleep(0.2)
        assert (await http.post(f"/sessions/{sid}/turns?wait=true", json={"content": "hello"})).status_code == 200
        await asyncio.wait_for(reading, 10)
    names = [name for name, _, _ in got]
    print(got)
    assert names[0] == "message_received" and names[-1] == "turn_finished" and set(names[1:-1]) == {"text"}
    assert all((event_id is None) == (name == "text") for name, event_id, _ in got)
    assert "".join(d["text"] for name, _, d in got if name == "text") == "echo: hello"


async def test_the_history_pages_forward_and_each_space_reads_its_own(store: BaseStore, keys: Keys) -> None:
    """``GET /v1/events/history`` pages by ``after`` (``next_after``), defaults to the newest, and is space-scoped."""
    llm = ScriptedLLM(default="ok")
    agents: dict[str, Agent] = {}

    def agent_of(space: str) -> Agent:
        agents[space] = make_agent(store.in_space(space), llm)
        return agents[space]

    app = create_app(make_agent(store, llm), spaces=agent_of, keys=keys.ring)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test/v1") as http:
        alpha, beta = bearer(keys.alpha), bearer(keys.beta)
        for label in ("a1", "a2", "a3"):
            await create(http, label, alpha)
        await create(http, "b1", beta)
        await agents["alpha"].events_recorded()
        await agents["beta"].events_recorded()
        first = (await http.get("/events/history", params={"after": 0, "limit": 2}, headers=alpha)).json()
        assert [e["data"]["label"] for e in first["events"]] == ["a1", "a2"] and first["next_after"] == 2
        rest = (await http.get("/events/history", params={"after": 2, "limit": 2}, headers=alpha)).json()
        assert [e["data"]["label"] for e in rest["events"]] == ["a3"] and rest["next_after"] is None
        newest = (await http.get("/events/history", params={"limit": 2}, headers=alpha)).json()
        assert [e["id"] for e in newest["events"]] == [2, 3] and newest["last_id"] == 3
        assert newest["events"][0]["type"] == "session_created" and newest["events"][0]["time"] > 0
        theirs = (await http.get("/events/history", headers=beta)).json()
        assert [e["data"]["label"] for e in theirs["events"]] == ["b1"] and theirs["last_id"] == 1


class Outage:
    """Makes a store method raise ``store_unavailable`` while ``down`` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: BaseStore, names: tuple[str, ...]) -> None:
        self.down = False
        self.refused = 0
        for name in names:
            monkeypatch.setattr(store, name, self._wrap(getattr(store, name)))

    def _wrap(self, method: Any) -> Any:
        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.refused += 1
                raise StoreError("injected: the database restarts", code="store_unavailable")
            return await method(*args, **kwargs)

        return wrapped


async def raw_lines(response: httpx.Response, into: list[str]) -> None:
    async for line in response.aiter_lines():
        into.append(line)


def data_of(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in lines if line.startswith("data:")]


async def test_a_log_tail_and_the_space_events_wait_out_an_unavailable_store(
    served: tuple[httpx.AsyncClient, Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While reads fail with store_unavailable, both streams send keep-alive comments, then go on without a gap."""
    http, agent = served
    store = await agent.store()
    sid = await create(http, "tailed")
    writer = store.in_space(store.space)  # a handle of its own, made before the outage breaks the server's reads
    assert isinstance(writer, EventHistory)
    outage = Outage(monkeypatch, store, ("read_events", "read_history", "get_session"))
    tail: list[str] = []
    space: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        tailing = await stack.enter_async_context(http.stream("GET", f"/sessions/{sid}/events/stream"))
        watching = await stack.enter_async_context(http.stream("GET", "/events", params={"types": "turn_finished"}))
        readers = [asyncio.create_task(raw_lines(tailing, tail)), asyncio.create_task(raw_lines(watching, space))]
        while not any(line.startswith("data:") for line in tail):  # the tail is past its first read
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        outage.down = True
        await writer.append(SessionId(sid), turn(1))  # written while the streams cannot read
        await writer.append_history([NewHistoryEntry(kind="turn_finished", data='{"turn":1}')])
        for _ in range(200):
            if all(any(line.startswith(": waiting for the store") for line in lines) for lines in (tail, space)):
                break
            await asyncio.sleep(0.05)
        outage.down = False
        for _ in range(200):
            if any(d.get("type") == "turn/end" for d in data_of(tail)) and data_of(space):
                break
            await asyncio.sleep(0.05)
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    assert any(line == ": waiting for the store (store_unavailable)" for line in tail)
    assert any(line == ": waiting for the store (store_unavailable)" for line in space)
    assert [d["seq"] for d in data_of(tail)] == list(range(7)), "every event once, in order"
    assert data_of(space) == [{"turn": 1}]


async def test_streams_of_a_space_share_one_fanout_and_each_gets_every_event_once(
    served: tuple[httpx.AsyncClient, Agent],
) -> None:
    """Three streams (one filtered) each get both sessions' events in order, once; the last out stops the fan-out."""
    http, agent = served
    seen: list[list[Event]] = [[], [], []]
    params: list[dict[str, str]] = [{}, {}, {"types": "session_created"}]
    async with contextlib.AsyncExitStack() as streams:
        readers = []
        for n in range(3):
            response = await streams.enter_async_context(http.stream("GET", "/events", params=params[n]))
            created = lambda got: sum(name == "session_created" for name, _, _ in got) == 2  # noqa: E731
            readers.append(asyncio.create_task(collect(response, seen[n], created)))
        for _ in range(100):  # every stream listens
            if listening(agent) == 3:
                break
            await asyncio.sleep(0.05)
        assert listening(agent) == 3
        await create(http, "one")
        await create(http, "two")
        await asyncio.wait_for(asyncio.gather(*readers), 10)
    for got in seen:
        labels = [data["label"] for name, _, data in got if name == "session_created"]
        assert labels == ["one", "two"]
        ids = [int(i) for _, i, _ in got if i is not None]
        assert ids == sorted(set(ids))
    assert {name for name, _, _ in seen[2]} == {"session_created"}
    for _ in range(100):
        if listening(agent) == 0:
            break
        await asyncio.sleep(0.05)
    assert listening(agent) == 0
