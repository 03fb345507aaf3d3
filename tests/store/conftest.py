"""The ``store`` fixture: every contract test runs on every backend (PostgreSQL through ``pg_url`` and
``pg_schema``, in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from stellate.store import BaseStore
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore

Reopen = Callable[[BaseStore], Awaitable[BaseStore]]
BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


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
