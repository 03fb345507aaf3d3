"""Shared test configuration.

PostgreSQL tests run against ``STELLATE_TEST_PG`` (default ``postgresql://postgres@127.0.0.1:5432/test``), in a
throwaway schema per test. When the server is unreachable they are skipped, except under ``CI=true``, where
they fail: CI must prove every backend.
"""

from __future__ import annotations

import importlib
import os
import uuid
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
PG_URL = os.environ.get("STELLATE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def require_extra() -> Callable[[str, str], ModuleType]:
    """Import a module of an optional extra; skip when it is missing, except in CI (CI=true), where it fails."""

    def require(module: str, extra: str) -> ModuleType:
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            reason = f"extra {extra!r} is not installed ({module}: {exc})"
            if IN_CI:
                pytest.fail(f"CI must install the {reason}")
            pytest.skip(reason)

    return require


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
