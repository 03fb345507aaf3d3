"""Helpers for the command's tests: results, a child-process runner, and reading the database back."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from stellate.store import SessionId
from stellate.store.sqlite import SqliteStore

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY")


@dataclass(frozen=True)
class Result:
    status: int
    out: str
    err: str


Run = Callable[..., Result]


@dataclass(frozen=True)
class Forest:
    root: str
    child: str


def run_process(*argv: str, stdin: str = "", timeout: float = 30) -> Result:
    """Run ``python -m stellate.cli ARGS`` as a child process."""
    done = subprocess.run(
        [sys.executable, "-m", "stellate.cli", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
    )
    return Result(done.returncode, done.stdout, done.stderr)


def read_db(db: Path, action: Callable[[SqliteStore], object]) -> object:
    """Open the database with the library and return ``await action(store)``."""

    async def go() -> object:
        store = await SqliteStore.open(f"sqlite:///{db}", migrate=False)
        try:
            result = action(store)
            return await result if asyncio.iscoroutine(result) else result
        finally:
            await store.close()

    return asyncio.run(go())


def session_ids(db: Path) -> list[str]:
    """Ids of every session in the database."""

    async def ids(store: SqliteStore) -> list[str]:
        return [r.id for r in await store.list_sessions()]

    result = read_db(db, ids)
    assert isinstance(result, list)
    return result


def events_of(db: Path, session_id: str) -> list[tuple[int, str, object]]:
    """``(seq, type, data)`` of a session's whole log."""

    async def read(store: SqliteStore) -> list[tuple[int, str, object]]:
        return [(e.seq, e.type, e.data) for e in await store.read_events(SessionId(session_id))]

    result = read_db(db, read)
    assert isinstance(result, list)
    return result
