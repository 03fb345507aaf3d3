"""A SQLite file read without the store: the path a URL names, and the session listing (issue 22).

`SqliteStore.open` brings the store's machinery (asyncio, its connection thread, leases, signals), which costs a
fresh process more than the listing itself. `read_listing` runs the store's own listing query on a plain
read-only connection and builds the same `SessionRecord`s. It writes nothing, takes no lease and migrates
nothing; for a file it cannot read as is (another schema version, a file still being created, a lock) it
answers None, and the caller opens the store, which says what to do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stellate.store._sql import record_from_row, select_sessions_sql
from stellate.store.types import SessionRecord

__all__ = ["LISTED_SPACE", "SCHEMA_VERSION", "read_listing", "sqlite_path"]

SCHEMA_VERSION = 10
"""The schema version this listing reads: ``len(stellate.store.sqlite.MIGRATIONS)`` (a test keeps them equal)."""
LISTED_SPACE = "default"
"""The space of an unscoped store handle (``stellate.store.base.DEFAULT_SPACE``)."""


def sqlite_path(url: str) -> str:
    """The file path of a ``sqlite:///path`` URL (a bare path is accepted as is)."""
    for prefix in ("sqlite:///", "sqlite://"):
        if url.startswith(prefix):
            return url[len(prefix) :] or ":memory:"
    return url


def read_listing(path: str | Path, *, space: str = LISTED_SPACE, timeout: float = 5.0) -> list[SessionRecord] | None:
    """Every session of ``space`` in creation order, as `SqliteStore.list_sessions` lists them.

    Returns None when only the store can answer: the file is missing, holds another schema version, or cannot
    be read (still being created, locked past ``timeout`` seconds, damaged).
    """
    target = Path(path)
    if not target.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout)
    except sqlite3.Error:
        return None
    try:
        version = conn.execute("SELECT MAX(version) FROM stellate_schema").fetchone()
        if version is None or version[0] != SCHEMA_VERSION:
            return None
        sql, params = select_sessions_sql(placeholder="?", parent_id=None, roots=False, space=space)
        return [record_from_row(row) for row in conn.execute(sql, params)]
    except sqlite3.Error:
        return None
    finally:
        conn.close()
