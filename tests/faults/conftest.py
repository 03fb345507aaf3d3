"""The ``backend`` fixture of the fault-injection suite: an open SQLite or PostgreSQL store.

PostgreSQL uses the shared ``pg_url`` and ``pg_schema`` fixtures (tests/conftest.py): skipped when the server
is unreachable, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stellate.store import BaseStore
from stellate.store.sqlite import SqliteStore


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "sqlite":
        store: BaseStore = await SqliteStore.open(f"sqlite:///{tmp_path / 'faults.db'}")
    else:
        from stellate.store.postgres import PostgresStore

        url, schema = request.getfixturevalue("pg_url"), request.getfixturevalue("pg_schema")
        store = await PostgresStore.open(url, schema=schema)
    yield store
    await store.close()
