"""PostgreSQL appends: the general path under the session's row lock, and one statement for a lease holder.

The general path is a transaction of four round trips (``BEGIN``, lock and read the row, one statement that
writes the events and the row and notifies, ``COMMIT``). A lease holder whose last write left a known head
(`stellate.store._batch.KnownHeads`) sends one statement instead, in autocommit: it updates the row only if
``next_seq`` and the lease token are still the known ones, inserts the events only for a row it updated, and
notifies only then. No row back means another writer came in between: nothing was written, and the general
path runs.
"""

from __future__ import annotations

from typing import Any

from stellate.store._batch import PlannedAppend
from stellate.store._sql import EVENT_COLUMNS, LEASE_COLUMNS, STATE_COLUMNS, event_rows, state_update_row
from stellate.store.signals import log_payload
from stellate.store.types import SessionId

__all__ = ["APPEND", "INSERT_EVENTS", "append_at_head_params", "append_at_head_sql", "append_params", "event_columns"]

_UNNEST = "unnest(%s::bigint[], %s::text[], %s::bigint[], %s::text[], %s::boolean[])"
_SET_STATE = ", ".join(c + " = %s" for c in STATE_COLUMNS)

# A whole batch in one statement: one array per column, whatever the number of events.
INSERT_EVENTS = f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) SELECT %s::text, * FROM {_UNNEST}"
# The NOTIFY rides on the same statement: it is delivered when (and only if) the transaction commits.
APPEND = (
    f"WITH new_events AS ({INSERT_EVENTS}) UPDATE sessions SET {_SET_STATE} WHERE id = %s RETURNING pg_notify(%s, %s)"
)


def append_at_head_sql(*, release: bool) -> str:
    """The one-statement append at a known head (giving the lease back too, with ``release``)."""
    cleared = "".join(f", {c} = NULL" for c in LEASE_COLUMNS) if release else ""
    return (
        f"WITH updated AS (UPDATE sessions SET {_SET_STATE}{cleared}"
        " WHERE id = %s AND space = %s AND next_seq = %s AND lease_token = %s RETURNING id),"
        f" inserted AS (INSERT INTO events ({', '.join(EVENT_COLUMNS)})"
        f" SELECT updated.id, e.* FROM updated, {_UNNEST} e)"
        " SELECT pg_notify(%s, %s) FROM updated"
    )


def event_columns(session_id: SessionId, planned: PlannedAppend) -> tuple[Any, ...]:
    """Parameters of `INSERT_EVENTS`: the session id, then one list per remaining column."""
    columns = list(zip(*event_rows(session_id, planned), strict=True))
    return (session_id, *(list(column) for column in columns[1:]))


def append_params(session_id: SessionId, planned: PlannedAppend, channel: str) -> tuple[Any, ...]:
    """Parameters of `APPEND`."""
    signal = log_payload(session_id, planned.record.next_seq)
    return (*event_columns(session_id, planned), *state_update_row(planned.record), session_id, channel, signal)


def append_at_head_params(
    session_id: SessionId, space: str, planned: PlannedAppend, head: int, token: str, channel: str
) -> tuple[Any, ...]:
    """Parameters of `append_at_head_sql`: the row update and its condition, the events, the signal."""
    signal = log_payload(session_id, planned.record.next_seq)
    events = event_columns(session_id, planned)[1:]
    return (*state_update_row(planned.record), session_id, space, head, token, *events, channel, signal)
