"""Helpers of the server tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from stellate import Agent, tool
from stellate.llm.scripted import ScriptedLLM
from stellate.llm.types import LLMRequest
from stellate.server.keys import KeyRing
from stellate.store import BaseStore


@tool
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return str(a + b)


def echo(request: LLMRequest) -> str:
    return f"echo: {request.messages[-1].content}"


def make_agent(store: BaseStore, llm: ScriptedLLM, **options: Any) -> Agent:
    return Agent(store, llm=llm, tools=[add], **options)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass(frozen=True, slots=True)
class Keys:
    ring: KeyRing
    alpha: str
    beta: str
    alpha_read_only: str


@contextlib.asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[tuple[str, uvicorn.Server]]:
    """``app`` on a real uvicorn at a random port of 127.0.0.1, always stopped afterwards."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", server
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


async def sse(response: httpx.Response) -> AsyncIterator[tuple[str, str | None, dict[str, Any]]]:
    """(event, id, data) of each server-sent event."""
    name, event_id, data = "message", None, []
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield name, event_id, json.loads("\n".join(data))
            name, event_id, data = "message", None, []
