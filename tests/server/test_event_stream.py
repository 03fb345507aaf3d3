"""The server's SSE response over real HTTP: messages, keep-alives, a client that goes, a server that stops."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI
from server_support import running

from stellate.server.event_stream import EventStream, ServerSentEvent, open_streams


class Source:
    """A stream's generator: what it sends, and whether its cleanup ran."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.closed = asyncio.Event()
        self.more: asyncio.Queue[ServerSentEvent | None] = asyncio.Queue()

    async def events(self) -> AsyncIterator[ServerSentEvent]:
        self.started.set()
        try:
            while (event := await self.more.get()) is not None:
                yield event
        finally:
            self.closed.set()


def _app(source: Source, ping: float = 15.0) -> FastAPI:
    app = FastAPI()

    @app.api_route("/v1/stream", methods=["GET", "HEAD"])
    async def stream() -> EventStream:
        return EventStream(source.events(), ping=ping)

    @app.get("/v1/open")
    async def count() -> int:
        return open_streams()

    return app


async def test_messages_arrive_as_sse_and_the_end_of_the_generator_ends_the_response() -> None:
    source = Source()
    async with running(_app(source)) as (url, _), httpx.AsyncClient(timeout=30) as http:
        for event in (ServerSentEvent("第一\n第二", event="note", id="7"), ServerSentEvent('{"a":1}'), None):
            source.more.put_nowait(event)
        response = await http.get(f"{url}/stream")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-store"
    assert response.text == "id: 7\r\nevent: note\r\ndata: 第一\r\ndata: 第二\r\n\r\n" + 'data: {"a":1}\r\n\r\n'
    assert source.closed.is_set()


async def test_a_quiet_stream_gets_keep_alive_comments() -> None:
    source = Source()
    async with running(_app(source, ping=0.2)) as (url, _), httpx.AsyncClient(timeout=30) as http:
        async with http.stream("GET", f"{url}/stream") as response:
            lines = response.aiter_lines()
            assert await asyncio.wait_for(anext(lines), 20) == ": ping"
            source.more.put_nowait(ServerSentEvent("after"))
            assert [await anext(lines) for _ in range(2)] == ["", "data: after"]


async def test_a_client_that_goes_ends_its_stream_and_the_generator_cleans_up() -> None:
    source = Source()
    async with running(_app(source)) as (url, _), httpx.AsyncClient(timeout=30) as http:
        async with http.stream("GET", f"{url}/stream"):
            await asyncio.wait_for(source.started.wait(), 20)
            assert (await http.get(f"{url}/open")).json() == 1
        await asyncio.wait_for(source.closed.wait(), 20)
        for _ in range(200):
            if (await http.get(f"{url}/open")).json() == 0:
                break
            await asyncio.sleep(0.05)
        assert (await http.get(f"{url}/open")).json() == 0


async def test_a_server_told_to_stop_ends_its_open_streams() -> None:
    source = Source()
    async with httpx.AsyncClient(timeout=30) as http:
        async with running(_app(source)) as (url, server):
            async with http.stream("GET", f"{url}/stream") as response:
                await asyncio.wait_for(source.started.wait(), 20)
                server.should_exit = True
                body = await asyncio.wait_for(response.aread(), 20)  # the response completes: no cut connection
        assert body == b""
        assert source.closed.is_set()


async def test_head_answers_the_headers_without_opening_a_stream() -> None:
    source = Source()
    async with running(_app(source)) as (url, _), httpx.AsyncClient(timeout=30) as http:
        response = await http.head(f"{url}/stream")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    assert not source.started.is_set()
