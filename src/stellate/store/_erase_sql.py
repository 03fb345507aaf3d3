"""The SQL of an erase (`stellate.store.erasure`) that SQLite and PostgreSQL share, in ``placeholder`` style.

What is deleted per session is listed by each backend in one place (``SESSION_ERASERS`` in
`stellate.store.sqlite_erase` and `stellate.store.pg_erase`): a table added beside the log that holds
anything of a session must join that list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stellate.store.erasure import Tombstone
from stellate.store.types import SessionId

__all__ = [
    "TOMBSTONE_COLUMNS",
    "TOMBSTONES_MIGRATION",
    "copy_events_sql",
    "insert_tombstone_sql",
    "lineage_sql",
    "select_tombstones_sql",
    "tombstone_from_row",
]

#: Appended to each SQL backend's migrations: what remains of an erased session (no content).
TOMBSTONES_MIGRATION = """
    CREATE TABLE tombstones (
        position BIGINT NOT NULL,
        id TEXT PRIMARY KEY,
        space TEXT NOT NULL,
        parent_id TEXT,
        source_id TEXT,
        fork_seq BIGINT,
        created_at BIGINT NOT NULL,
        erased_at BIGINT NOT NULL,
        erased_by TEXT NOT NULL
    );
    CREATE INDEX tombstones_space ON tombstones(space, erased_at)
    """

TOMBSTONE_COLUMNS = ("id", "parent_id", "source_id", "fork_seq", "created_at", "erased_at", "erased_by")


def lineage_sql(placeholder: str) -> str:
    """Every session of a space with its fork source and inherited length, in creation order (parameter: space)."""
    return f"SELECT id, source_id, inherited FROM sessions WHERE space = {placeholder} ORDER BY position"


def copy_events_sql(placeholder: str) -> str:
    """Copy a holder's events ``start <= seq < stop`` into a dependent (parameters: dependent, holder, start, stop)."""
    p = placeholder
    return (
        "INSERT INTO events (session_id, seq, type, time, data, ignorable)"
        f" SELECT {p}, seq, type, time, data, ignorable FROM events WHERE session_id = {p} AND seq >= {p} AND seq < {p}"
    )


def insert_tombstone_sql(placeholder: str) -> str:
    """Write a tombstone from the session's row before it goes (parameters: erased_at, erased_by, id, space)."""
    p = placeholder
    return (
        "INSERT INTO tombstones (position, id, space, parent_id, source_id, fork_seq, created_at, erased_at, erased_by)"
        f" SELECT position, id, space, parent_id, source_id, fork_seq, created_at, {p}, {p}"
        f" FROM sessions WHERE id = {p} AND space = {p}"
    )


def select_tombstones_sql(placeholder: str) -> str:
    """A space's tombstones, oldest erase first (parameter: space)."""
    columns = ", ".join(TOMBSTONE_COLUMNS)
    return f"SELECT {columns} FROM tombstones WHERE space = {placeholder} ORDER BY erased_at, position"


def tombstone_from_row(row: Sequence[Any]) -> Tombstone:
    """A `Tombstone` from a row of `TOMBSTONE_COLUMNS`."""
    return Tombstone(
        id=SessionId(row[0]),
        parent_id=SessionId(row[1]) if row[1] is not None else None,
        source_id=SessionId(row[2]) if row[2] is not None else None,
        fork_seq=row[3],
        created_at=int(row[4]),
        erased_at=int(row[5]),
        erased_by=str(row[6]),
    )
