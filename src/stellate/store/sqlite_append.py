"""SQLite writes: appends inside the caller's ``BEGIN IMMEDIATE`` (the general path, a lease holder's shortcut).

The general path reads the row under the write lock, plans the batch on it and writes.

A lease holder whose last write left a known head (`stellate.store._batch.KnownHeads`) plans its batch on the
remembered record and updates the row first, only if ``next_seq`` and the lease token are still the known ones
(giving the lease back in the same statement when the write releases it). An update that matched no row means
another writer came in between: nothing was written, and the general path runs in the same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from stellate.errors import NotFoundError
from stellate.log.events import NewEvent
from stellate.store._batch import Fence, KnownHeads, PlannedAppend, interleaved_range, plan_append
from stellate.store._sql import (
    EVENT_COLUMNS,
    LEASE_COLUMNS,
    SELECTED_COLUMNS,
    STATE_COLUMNS,
    event_rows,
    lease_sql,
    record_from_row,
    state_update_row,
)
from stellate.store.sqlite_connections import translate
from stellate.store.sqlite_search import index_planned
from stellate.store.types import SessionId

__all__ = ["INSERT_EVENTS", "append_in_transaction", "write_one"]

INSERT_EVENTS = f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES ({', '.join('?' * len(EVENT_COLUMNS))})"
_SELECT_RECORD = f"SELECT {', '.join(SELECTED_COLUMNS)} FROM sessions WHERE id = ? AND space = ?"
_SET_STATE = ", ".join(c + " = ?" for c in STATE_COLUMNS)
_UPDATE_STATE = f"UPDATE sessions SET {_SET_STATE} WHERE id = ?"
_SELECT_TYPES = "SELECT type FROM events WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq"
_RELEASE = lease_sql("?")["release"]
_CLEARED = "".join(f", {c} = NULL" for c in LEASE_COLUMNS)
_UPDATE_AT_HEAD = {
    release: f"UPDATE sessions SET {_SET_STATE}{_CLEARED if release else ''}"
    " WHERE id = ? AND space = ? AND next_seq = ? AND lease_token = ?"
    for release in (False, True)
}


def append_in_transaction(
    db: sqlite3.Connection,
    heads: KnownHeads,
    space: str,
    session_id: SessionId,
    events: Sequence[NewEvent],
    expected: int | None,
    fence: Fence,
) -> PlannedAppend:
    """Append one batch in the caller's write transaction; the planned batch (its record is the row after it).

    The caller remembers ``planned.record`` in ``heads`` once the transaction committed (a holder's write).
    """
    planned = _at_known_head(db, heads, space, session_id, events, expected, fence)
    if planned is None:
        planned = _general(db, space, session_id, events, expected, fence)
    else:
        _insert(db, session_id, planned)
    return planned


def _at_known_head(
    db: sqlite3.Connection,
    heads: KnownHeads,
    space: str,
    session_id: SessionId,
    events: Sequence[NewEvent],
    expected: int | None,
    fence: Fence,
) -> PlannedAppend | None:
    known = heads.plan(space, session_id, events, expected, fence)
    if known is None or fence.token is None:
        return None
    planned, head = known
    params = (*state_update_row(planned.record), session_id, space, head, fence.token)
    if db.execute(_UPDATE_AT_HEAD[fence.release], params).rowcount != 1:
        return None
    return planned


def _general(
    db: sqlite3.Connection,
    space: str,
    session_id: SessionId,
    events: Sequence[NewEvent],
    expected: int | None,
    fence: Fence,
) -> PlannedAppend:
    row = db.execute(_SELECT_RECORD, (session_id, space)).fetchone()
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", session_id=session_id)
    record = record_from_row(row)
    gap = interleaved_range(record, expected, fence)
    types = [t for (t,) in db.execute(_SELECT_TYPES, (session_id, *gap))] if gap is not None else None
    planned = plan_append(record, events, expected, fence, interleaved=types)
    _insert(db, session_id, planned)
    db.execute(_UPDATE_STATE, (*state_update_row(planned.record), session_id))
    if fence.release:
        db.execute(_RELEASE, (session_id, fence.token))
    return planned


def _insert(db: sqlite3.Connection, session_id: SessionId, planned: PlannedAppend) -> None:
    db.executemany(INSERT_EVENTS, event_rows(session_id, planned))
    index_planned(db, session_id, planned)


def write_one(db: sqlite3.Connection, statement: str, params: Sequence[Any], *, changed: bool = False) -> Any:
    """One write statement alone, in autocommit: atomic by itself, with no ``BEGIN`` / ``COMMIT`` of its own.

    The lease and claim statements are single ``UPDATE``s (or an upsert), so they need no explicit transaction.
    Returns the first row (``RETURNING``), or with ``changed`` True when a row changed; None otherwise. The rows
    are drained, so the statement and its implicit transaction are finished when this returns.
    """
    try:
        cursor = db.execute(statement, params)
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, "write failed") from exc
    if changed:
        return True if cursor.rowcount > 0 else None
    return rows[0] if rows else None
