"""The server's limits on a real uvicorn (127.0.0.1, random port): slow clients cut, stream caps, keep-alive.

No test asserts a duration: each waits for an outcome (a closed connection, an answer) within a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app, serving
from stellate.server.defaults import DEFAULT_KEEP_ALIVE
from stellate.server.serving import BoundServer, HeaderDeadlineProtocol, uvicorn_config
from stellate.store.memory import MemoryStore

BOUND = 20.0
"""Seconds any wait of these tests may last before the test fails."""


@contextlib.asynccontextmanager
async def running(app: FastAPI, **options: Any) -> AsyncIterator[tuple[str, int]]:
    """``app`` as `stellate serve` runs it, on a random port of 127.0.0.1; yields (``/v1`` URL, port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = BoundServer(uvicorn_config(app, log_level="warning", timeout_graceful_shutdown=1, **options), sock)
    task = asyncio.create_task(server.serve())
    port = int(sock.getsockname()[1])
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}/v1", port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, BOUND)
        sock.close()


def app_of(**options: Any) -> FastAPI:
    return create_app(Agent(MemoryStore(), llm=ScriptedLLM(default="ok")), **options)


async def read_until_closed(port: int, sent: bytes) -> bytes:
    """Send ``sent`` on a new connection, then everything the server answers until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(sent)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), BOUND)  # read() returns at EOF: the server closed
    finally:
        writer.close()


@pytest.fixture(params=["httptools", "h11"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each HTTP parser the server may run on: httptools (installed with the server extra), else h11."""
    if request.param == "h11":
        monkeypatch.setattr(serving, "_protocol", HeaderDeadlineProtocol.with_timeout)
    return str(request.param)


def test_the_server_parses_http_with_httptools_when_it_is_installed() -> None:
    protocol = uvicorn_config(app_of()).http
    assert isinstance(protocol, type) and protocol.__name__ == "HttpToolsDeadlineProtocol"


@pytest.mark.usefixtures("parser")
async def test_a_client_that_never_finishes_its_headers_is_cut_off() -> None:
    async with running(app_of(), header_timeout=0.3) as (_, port):
        answer = await read_until_closed(port, b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert answer.startswith(b"HTTP/1.1 408 ")


@pytest.mark.usefixtures("parser")
async def test_a_connection_that_sends_nothing_is_closed_silently() -> None:
    async with running(app_of(), header_timeout=0.3) as (_, port):
        assert await read_until_closed(port, b"") == b""


async def test_a_client_that_trickles_its_body_gets_408() -> None:
    async with running(app_of(body_timeout=0.3)) as (_, port):
        head = b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        answer = await read_until_closed(port, head + b'Content-Length: 100\r\n\r\n{"label": ')
        assert answer.startswith(b"HTTP/1.1 408 ") and b'"code":"request_timeout"' in answer


async def test_a_pooled_connection_outlives_uvicorns_default_keep_alive() -> None:
    """The issue's ReadError: uvicorn's 5 s default closed idle connections that clients were about to reuse."""
    assert uvicorn_config(app_of()).timeout_keep_alive == DEFAULT_KEEP_ALIVE > 60
    ports: set[int] = set()

    async def remember(response: httpx.Response) -> None:
        stream = response.extensions["network_stream"]
        ports.add(stream.get_extra_info("socket").getsockname()[1])

    async with running(app_of()) as (url, _):
        pool = httpx.Limits(keepalive_expiry=120)  # httpx's own 5 s default would drop the connection first
        async with httpx.AsyncClient(base_url=url, limits=pool, event_hooks={"response": [remember]}) as http:
            assert (await http.get("/health")).status_code == 200
            await asyncio.sleep(5.5)
            assert (await http.get("/health")).status_code == 200
    assert len(ports) == 1  # the same connection both times


async def _open_stream(http: httpx.AsyncClient, path: str, stack: contextlib.AsyncExitStack) -> httpx.Response:
    response = await stack.enter_async_context(http.stream("GET", path))
    if response.status_code != 200:
        await response.aread()
    return response


@pytest.mark.parametrize("per", ["client", "space"])
async def test_streams_past_a_cap_get_429_with_retry_after(per: str) -> None:
    caps = {
        "max_streams_per_client": 2 if per == "client" else 100,
        "max_streams_per_space": 2 if per == "space" else 100,
    }
    async with running(app_of(**caps)) as (url, _):
        async with httpx.AsyncClient(base_url=url, timeout=BOUND) as http, contextlib.AsyncExitStack() as stack:
            sid = (await http.post("/sessions", json={"label": "tailed"})).json()["id"]
            held = [await _open_stream(http, p, stack) for p in ("/events", f"/sessions/{sid}/events/stream")]
            assert [r.status_code for r in held] == [200, 200]
            refused = await _open_stream(http, "/events", stack)
            assert refused.status_code == 429 and refused.headers["retry-after"].isdigit()
            assert refused.json()["code"] == "too_many_streams" and refused.json()["details"]["per"] == per
            assert (await http.get("/info")).status_code == 200  # other requests are not capped
            await held[0].aclose()
            for _ in range(int(BOUND / 0.05)):  # the server sees the close when the stream next writes or reads
                again = await _open_stream(http, "/events", stack)
                if again.status_code == 200:
                    break
                await asyncio.sleep(0.05)
            assert again.status_code == 200
