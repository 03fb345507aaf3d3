"""Fixtures of the server tests: an app over SQLite and PostgreSQL, with and without keys.

The HTTP suite runs on both SQL backends (the server contract). PostgreSQL runs in a throwaway schema;
when it is unreachable its tests are skipped, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
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
PG_URL = os.environ.get("STELLATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def pg_schema() -> Iterator[str]:
    try:
        import psycopg
        from psycopg import sql

        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL at {PG_URL} is required under CI=true: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {exc}")
    name = f"stellate_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    opened: BaseStore
    if request.param == "sqlite":
        opened = await SqliteStore.open(f"sqlite:///{tmp_path / 'server.db'}")
    else:
        from stellate.store.postgres import PostgresStore

        opened = await PostgresStore.open(PG_URL, schema=request.getfixturevalue("pg_schema"))
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
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test/v1") as http:
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
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://test/v1") as http:
        yield http
