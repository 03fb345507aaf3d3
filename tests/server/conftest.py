"""Fixtures of the server tests: an app over SQLite and PostgreSQL, with and without keys.

The HTTP suite runs on both SQL backends (the server contract). PostgreSQL runs in a throwaway schema;
when it is unreachable its tests are skipped, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from server_support import Keys, echo, make_agent

from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.keys import KeyRing
from stellate.store import BaseStore
from stellate.store.sqlite import SqliteStore

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    opened: BaseStore
    if request.param == "sqlite":
        opened = await SqliteStore.open(f"sqlite:///{tmp_path / 'server.db'}")
    else:
        from stellate.store.postgres import PostgresStore

        url, schema = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")
        opened = await PostgresStore.open(url, schema=schema)
    yield opened
    await opened.close()


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(default=echo)


@pytest.fixture
def app(store: BaseStore, llm: ScriptedLLM) -> FastAPI:
    return create_app(make_agent(store, llm), spaces=lambda space: make_agent(store.in_space(space), llm))


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as http:
        yield http


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    ring = KeyRing(tmp_path / "keys.json")
    return Keys(
        ring,
        ring.create("alpha")[1],
        ring.create("beta")[1],
        ring.create("alpha", read_only=True)[1],
    )


@pytest.fixture
async def keyed(store: BaseStore, llm: ScriptedLLM, keys: Keys) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app that needs keys; pass ``headers=bearer(key)`` per request."""
    app = create_app(
        make_agent(store, llm), spaces=lambda space: make_agent(store.in_space(space), llm), keys=keys.ring
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as http:
        yield http
