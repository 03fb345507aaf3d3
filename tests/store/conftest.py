"""The ``store`` fixture: every contract test runs on every backend.

PostgreSQL runs against ``STELLATE_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/test``), in a
throwaway schema per test. When the server is unreachable the PostgreSQL tests are skipped, except under
``CI=true``, where they fail: CI must prove every backend.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from stellate.store import BaseStore
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore

Reopen = Callable[[BaseStore], Awaitable[BaseStore]]
BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
PG_URL = os.environ.get("STELLATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_problem(url: str) -> str | None:
    """Why the test server cannot be used, or None."""
    try:
        import psycopg
    except ImportError:
        return 'psycopg is not installed (pip install "stellate[postgres]")'
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]
    return None


@pytest.fixture(scope="session")
def pg_url() -> str:
    """The test server's URL, once it has answered."""
    problem = _postgres_problem(PG_URL)
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL at {PG_URL} is required under CI=true: {problem}", pytrace=False)
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {problem}")
    return PG_URL


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A fresh schema name (the store creates it), dropped with everything in it after the test."""
    import psycopg
    from psycopg import sql

    name = f"stellate_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


async def _open(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> BaseStore:
    if backend == "memory":
        return MemoryStore()
    if backend == "sqlite":
        return await SqliteStore.open(f"sqlite:///{tmp_path / 'store.db'}")
    from stellate.store.postgres import PostgresStore

    schema: str = request.getfixturevalue("pg_schema")
    return await PostgresStore.open(request.getfixturevalue("pg_url"), schema=schema)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    opened = [await _open(request, request.param, tmp_path)]
    request.node.stash[_OPENED] = opened
    yield opened[0]
    for s in opened:
        await s.close()


_OPENED = pytest.StashKey[list[BaseStore]]()


@pytest.fixture
def reopen(request: pytest.FixtureRequest) -> Reopen:
    async def _reopen(current: BaseStore) -> BaseStore:
        if isinstance(current, MemoryStore):
            return current
        await current.close()
        if isinstance(current, SqliteStore):
            fresh: BaseStore = await SqliteStore.open(f"sqlite:///{current.path}")
        else:
            from stellate.store.postgres import PostgresStore

            assert isinstance(current, PostgresStore)
            fresh = await PostgresStore.open(current.url, schema=current.schema)
        request.node.stash[_OPENED].append(fresh)
        return fresh

    return _reopen
