"""The ``backend`` fixture of the fault-injection suite: an open SQLite or PostgreSQL store.

PostgreSQL runs against ``STELLATE_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/test``) in a
throwaway schema; unreachable, it is skipped, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stellate.store import BaseStore
from stellate.store.sqlite import SqliteStore

PG_URL = os.environ.get("STELLATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_url() -> str:
    try:
        import psycopg

        psycopg.connect(PG_URL, connect_timeout=3).close()
    except Exception as exc:  # ImportError or psycopg.Error: either way the server cannot be used
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL at {PG_URL} is required under CI=true: {exc}", pytrace=False)
        pytest.skip(f"PostgreSQL unreachable at {PG_URL}: {exc}")
    return PG_URL


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseStore]:
    if request.param == "sqlite":
        store: BaseStore = await SqliteStore.open(f"sqlite:///{tmp_path / 'faults.db'}")
        yield store
        await store.close()
        return
    import psycopg
    from psycopg import sql

    from stellate.store.postgres import PostgresStore

    url, schema = _postgres_url(), f"stellate_faults_{uuid.uuid4().hex[:12]}"
    store = await PostgresStore.open(url, schema=schema)
    try:
        yield store
    finally:
        await store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
