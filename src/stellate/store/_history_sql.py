"""The SQL of the event history (`stellate.store.history`) that SQLite and PostgreSQL share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stellate.store.history import HistoryBounds, HistoryEntry, HistoryWindow

__all__ = [
    "MAX_ID",
    "entries_of",
    "head_sql",
    "prune_params",
    "prune_sql",
    "read_params",
    "read_sql",
    "upsert_head_sql",
]

MAX_ID = 1 << 62


def head_sql(placeholder: str) -> str:
    """A space's last id (parameter: space); no row while it has no history."""
    return f"SELECT last_id FROM event_history_heads WHERE space = {placeholder}"


def upsert_head_sql(placeholder: str) -> str:
    """Take ``count`` ids of a space (parameters: space, count), returning the last; locks the head until commit."""
    p = placeholder
    return (
        f"INSERT INTO event_history_heads AS h (space, last_id) VALUES ({p}, {p})"
        " ON CONFLICT (space) DO UPDATE SET last_id = h.last_id + excluded.last_id RETURNING last_id"
    )


def read_sql(placeholder: str, *, kinds: int, newest: bool) -> str:
    """Rows of one space in an id range, of ``kinds`` kinds (0: any); newest first when ``newest``."""
    p = placeholder
    where = f"space = {p} AND id > {p} AND id < {p} AND time >= {p}"
    if kinds:
        where += f" AND kind IN ({', '.join([p] * kinds)})"
    order = "DESC" if newest else "ASC"
    return f"SELECT id, time, kind, data FROM event_history WHERE {where} ORDER BY id {order} LIMIT {p}"


def read_params(space: str, window: HistoryWindow, kinds: Sequence[str] | None, limit: int) -> tuple[Any, ...]:
    """The parameters of `read_sql`."""
    return (space, window.low, window.high, window.min_time, *(kinds or ()), max(limit, 0))


def prune_sql(placeholder: str) -> str:
    """Delete a space's rows past the bounds (parameters: `prune_params`)."""
    p = placeholder
    return f"DELETE FROM event_history WHERE space = {p} AND (id <= {p} OR time < {p})"


def prune_params(space: str, last_id: int, now: int, bounds: HistoryBounds) -> tuple[Any, ...]:
    """The parameters of `prune_sql` after an append that ended at ``last_id``."""
    return (space, last_id - bounds.max_entries, now - bounds.max_age_ms)


def entries_of(rows: Sequence[Sequence[Any]], *, newest: bool) -> list[HistoryEntry]:
    """Rows of `read_sql` as entries in id order."""
    entries = [HistoryEntry(id=int(r[0]), time=int(r[1]), kind=str(r[2]), data=str(r[3])) for r in rows]
    if newest:
        entries.reverse()
    return entries
