"""How PostgreSQL appends to and reads the event history (`stellate.store.history`).

An append is one statement: it takes the space's next ids on its head row (which stays locked until the
statement commits, so ids are given in commit order), inserts the rows and notifies ``history``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import TupleRow

from stellate.store._history_sql import entries_of, head_sql, prune_params, prune_sql, read_params, read_sql
from stellate.store.history import (
    HistoryBounds,
    HistoryEntry,
    HistoryPage,
    HistoryWindow,
    NewHistoryEntry,
    prune_due,
)

__all__ = ["append_history", "read_history"]

Connection = AsyncConnection[TupleRow]

_APPEND = """
WITH head AS (
    INSERT INTO event_history_heads AS h (space, last_id) VALUES (%(space)s, %(count)s)
    ON CONFLICT (space) DO UPDATE SET last_id = h.last_id + excluded.last_id RETURNING last_id
), added AS (
    INSERT INTO event_history (space, id, time, kind, data)
    SELECT %(space)s, head.last_id - %(count)s + t.n, %(time)s, t.kind, t.data
    FROM head, unnest(%(kinds)s::text[], %(data)s::text[]) WITH ORDINALITY AS t(kind, data, n)
)
SELECT head.last_id, pg_notify(%(channel)s, head.last_id::text || ' ' || %(space)s::text) FROM head
"""
_PRUNE = prune_sql("%s")
_HEAD = head_sql("%s")


async def append_history(
    conn: Connection,
    *,
    space: str,
    entries: Sequence[NewHistoryEntry],
    now: int,
    bounds: HistoryBounds,
    channel: str,
) -> list[HistoryEntry]:
    """Append ``entries`` to ``space``'s history in one statement, notifying ``channel``; prune when due."""
    params: dict[str, Any] = {
        "space": space,
        "count": len(entries),
        "time": now,
        "kinds": [e.kind for e in entries],
        "data": [e.data for e in entries],
        "channel": channel,
    }
    row = await (await conn.execute(_APPEND, params)).fetchone()
    last = int(row[0]) if row else 0
    if prune_due(last, len(entries)):
        await conn.execute(_PRUNE, prune_params(space, last, now, bounds))
    first = last - len(entries) + 1
    return [HistoryEntry(id=first + n, time=now, kind=e.kind, data=e.data) for n, e in enumerate(entries)]


async def read_history(
    conn: Connection,
    *,
    space: str,
    after: int | None,
    before: int | None,
    limit: int,
    kinds: Sequence[str] | None,
    now: int,
    bounds: HistoryBounds,
) -> HistoryPage:
    """The head, then the rows (so every id up to the head that is still kept is among them)."""
    head = await (await conn.execute(_HEAD, (space,))).fetchone()
    last_id = int(head[0]) if head else 0
    if kinds is not None and not kinds:
        return HistoryPage(entries=[], last_id=last_id)  # PostgreSQL refuses ``IN ()``; nothing could match
    window = HistoryWindow.of(after, before, last_id, now, bounds)
    newest = after is None
    query = read_sql("%s", kinds=len(kinds or ()), newest=newest)
    rows = await (await conn.execute(query, read_params(space, window, kinds, limit))).fetchall()
    return HistoryPage(entries=entries_of(rows, newest=newest), last_id=last_id)
