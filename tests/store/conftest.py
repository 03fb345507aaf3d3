"""The ``store`` fixture: every contract test runs on every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from stellate.store import BaseStore
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore

Reopen = Callable[[BaseStore], Awaitable[BaseStore]]
BACKENDS = ["memory", "sqlite"]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    opened: list[BaseStore] = []
    if request.param == "memory":
        opened.append(MemoryStore())
    else:
        opened.append(await SqliteStore.open(f"sqlite:///{tmp_path / 'store.db'}"))
    request.node.stash[_OPENED] = opened
    yield opened[0]
    for s in opened:
        await s.close()


_OPENED = pytest.StashKey[list[BaseStore]]()


@pytest.fixture
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Reopen:
    async def _reopen(current: BaseStore) -> BaseStore:
        if isinstance(current, MemoryStore):
            return current
        await current.close()
        fresh = await SqliteStore.open(f"sqlite:///{tmp_path / 'store.db'}")
        request.node.stash[_OPENED].append(fresh)
        return fresh

    return _reopen
