"""Row mapping shared by the SQL backends: one column list, one record <-> row conversion."""

from __future__ import annotations

import json
from collections.abc import Sequence
from json import loads
from typing import TYPE_CHECKING, Any

from stellate.log.cursor import Cursor
from stellate.log.events import Event, stored_event
from stellate.log.state import Slots
from stellate.store.digests import SessionDigest
from stellate.store.types import Lease, SessionId, SessionRecord

if TYPE_CHECKING:
    from stellate.store._batch import PlannedAppend

__all__ = [
    "EVENT_COLUMNS",
    "LEASE_COLUMNS",
    "SELECTED_COLUMNS",
    "RECORD_COLUMNS",
    "STATE_COLUMNS",
    "WRITTEN_COLUMNS",
    "event_from_row",
    "digest_from_row",
    "event_rows",
    "claim_sql",
    "lease_sql",
    "record_from_row",
    "record_row",
    "select_digests_sql",
    "select_events_sql",
    "SPACE_MIGRATION",
    "select_sessions_sql",
    "state_update_row",
]

#: Columns of the ``sessions`` table a record is read from, in the order `record_row` produces them.
RECORD_COLUMNS = (
    "id",
    "parent_id",
    "source_id",
    "fork_seq",
    "inherited",
    "created_at",
    "label",
    "status",
    "system_prompt",
    "memory",
    "insight",
    "config",
    "last_activity",
    "turn_count",
    "next_seq",
    "cursor",
)
#: Written from a record, never read back into one: ``turn_open`` copies the cursor's flag so that a listing
#: reads a column instead of parsing every session's cursor JSON (kept by every insert and append).
DERIVED_COLUMNS = ("turn_open",)
#: What an insert writes: `RECORD_COLUMNS` then `DERIVED_COLUMNS`, the order of `record_row`.
WRITTEN_COLUMNS = RECORD_COLUMNS + DERIVED_COLUMNS
#: Columns of a `SessionDigest`, in its field order: a listing decodes none of the JSON columns.
DIGEST_COLUMNS = ("id", "label", "status", "parent_id", "memory", "insight", "turn_count", "last_activity", "turn_open")
EVENT_COLUMNS = ("session_id", "seq", "type", "time", "data", "ignorable")
#: The lease columns of ``sessions``: written only by the lease statements, never by an append.
LEASE_COLUMNS = ("lease_owner", "lease_token", "lease_acquired_at", "lease_expires_at")
#: What a record read selects: `RECORD_COLUMNS` then `LEASE_COLUMNS`.
SELECTED_COLUMNS = RECORD_COLUMNS + LEASE_COLUMNS

#: Columns an append rewrites, in the order of `state_update_row`; the identity and lineage columns never change.
STATE_COLUMNS = RECORD_COLUMNS[6:] + DERIVED_COLUMNS


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
"""``json.dumps(value, separators=(",", ":"))`` without building an encoder per call (every append runs it)."""


def record_row(record: SessionRecord) -> tuple[Any, ...]:
    """Values for every column of `WRITTEN_COLUMNS`."""
    return (
        record.id,
        record.parent_id,
        record.source_id,
        record.fork_seq,
        record.inherited,
        record.created_at,
        *state_update_row(record),
    )


def state_update_row(record: SessionRecord) -> tuple[Any, ...]:
    """Values for `STATE_COLUMNS` (``label`` to ``cursor``, then ``turn_open``)."""
    slots = record.slots
    return (
        slots.label,
        slots.status,
        slots.system_prompt,
        slots.memory,
        slots.insight,
        _ENCODE(slots.config),
        slots.last_activity,
        record.cursor.last_turn,
        record.cursor.next_seq,
        _ENCODE(record.cursor.to_json()),
        record.cursor.turn_open,
    )


def record_from_row(row: Sequence[Any]) -> SessionRecord:
    """A record from a row of `SELECTED_COLUMNS` (JSON columns may arrive decoded from PostgreSQL)."""
    config, cursor = row[11], row[15]
    slots = Slots(
        label=row[6],
        status=row[7],
        system_prompt=row[8],
        memory=row[9],
        insight=row[10],
        config=json.loads(config) if isinstance(config, str) else config,
        last_activity=row[12],
    )
    return SessionRecord(
        id=SessionId(row[0]),
        parent_id=SessionId(row[1]) if row[1] is not None else None,
        source_id=SessionId(row[2]) if row[2] is not None else None,
        fork_seq=row[3],
        inherited=row[4],
        created_at=row[5],
        slots=slots,
        cursor=Cursor.from_json(json.loads(cursor) if isinstance(cursor, str) else cursor),
        lease=Lease(owner=row[16], token=row[17], acquired_at=row[18], expires_at=row[19]) if row[17] else None,
    )


def event_rows(session_id: SessionId, planned: PlannedAppend) -> list[tuple[Any, ...]]:
    """Rows for the ``events`` table, reusing the JSON text made during validation."""
    return [
        (session_id, e.seq, e.type, e.time, text, e.ignorable)
        for e, text in zip(planned.events, planned.texts, strict=True)
    ]


def event_from_row(row: Sequence[Any]) -> Event:
    """An `Event` from ``seq, type, time, data, ignorable`` (``data`` is JSON text, or decoded by PostgreSQL)."""
    data = row[3]
    return stored_event(row[0], row[1], row[2], loads(data) if type(data) is str else data, bool(row[4]))


def select_events_sql(*, placeholder: str, types: Sequence[str] | None, reverse: bool, limit: int | None) -> str:
    """The range query over one session's own events, in ``placeholder`` style (``?`` or ``%s``)."""
    p = placeholder
    sql = f"SELECT seq, type, time, data, ignorable FROM events WHERE session_id = {p} AND seq >= {p} AND seq < {p}"
    if types is not None:
        sql += f" AND type IN ({', '.join([p] * len(types))})"
    sql += " ORDER BY seq DESC" if reverse else " ORDER BY seq"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql


def lease_sql(placeholder: str) -> dict[str, str]:
    """The lease statements in ``placeholder`` style; each is one atomic ``UPDATE`` of the session's row.

    ``take`` grants a lease when none is live (parameters: owner, token, acquired_at, expires_at, id, now, space) and
    returns the record; ``renew`` moves the expiry of a grant (expires_at, id, token); ``release`` clears a grant
    (id, token). A statement naming a token that is no longer on the row changes nothing.
    """
    p = placeholder
    cleared = ", ".join(f"{c} = NULL" for c in LEASE_COLUMNS)
    return {
        "take": f"UPDATE sessions SET {', '.join(c + ' = ' + p for c in LEASE_COLUMNS)}"
        f" WHERE id = {p} AND (lease_token IS NULL OR lease_expires_at <= {p}) AND space = {p}"
        f" RETURNING {', '.join(SELECTED_COLUMNS)}",
        "renew": f"UPDATE sessions SET lease_expires_at = {p} WHERE id = {p} AND lease_token = {p}",
        "release": f"UPDATE sessions SET {cleared} WHERE id = {p} AND lease_token = {p}",
    }


def claim_sql(placeholder: str) -> dict[str, str]:
    """The claim statements, in ``placeholder`` style.

    ``take`` (key, owner, token, expires_at, now) records a claim unless a live one holds the key (an upsert
    that changes no row when refused); ``release`` (key, token) drops it.
    """
    p = placeholder
    return {
        "take": f"INSERT INTO claims (key, owner, token, expires_at) VALUES ({p}, {p}, {p}, {p})"
        " ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, token = excluded.token,"
        f" expires_at = excluded.expires_at WHERE claims.expires_at <= {p}",
        "release": f"DELETE FROM claims WHERE key = {p} AND token = {p}",
    }


def select_sessions_sql(
    *, placeholder: str, parent_id: SessionId | None, roots: bool, space: str
) -> tuple[str, tuple[Any, ...]]:
    """The listing of `Store.list_sessions` (all, children of ``parent_id``, or roots) of one space, in order."""
    p = placeholder
    select = f"SELECT {', '.join(SELECTED_COLUMNS)} FROM sessions WHERE space = {p}"
    if parent_id is not None:
        return f"{select} AND parent_id = {p} ORDER BY position", (space, parent_id)
    if roots:
        return f"{select} AND parent_id IS NULL ORDER BY position", (space,)
    return f"{select} ORDER BY position", (space,)


#: Appended to each SQL backend's migrations: sessions belong to a space (a tenant); existing ones to the default.
SPACE_MIGRATION = """
    ALTER TABLE sessions ADD COLUMN space TEXT NOT NULL DEFAULT 'default';
    CREATE INDEX sessions_space ON sessions(space, position)
    """


def select_digests_sql(*, placeholder: str) -> str:
    """One space's `DIGEST_COLUMNS`, in creation order."""
    return f"SELECT {', '.join(DIGEST_COLUMNS)} FROM sessions WHERE space = {placeholder} ORDER BY position"


# A listing builds thousands of digests: `digest_from_row` sets their slots through these descriptors, bound once,
# a third of the cost of the frozen dataclass's ``__init__`` (one ``object.__setattr__`` by name per field).
_new = object.__new__
_slot = vars(SessionDigest)
_set_id = _slot["id"].__set__
_set_label = _slot["label"].__set__
_set_status = _slot["status"].__set__
_set_parent_id = _slot["parent_id"].__set__
_set_memory = _slot["memory"].__set__
_set_insight = _slot["insight"].__set__
_set_turn_count = _slot["turn_count"].__set__
_set_last_activity = _slot["last_activity"].__set__
_set_turn_open = _slot["turn_open"].__set__
_set_awaiting_approval = _slot["awaiting_approval"].__set__


def digest_from_row(row: Sequence[Any]) -> SessionDigest:
    """A `SessionDigest` from a row of `DIGEST_COLUMNS` (``turn_open`` is 0 or 1 in SQLite, a bool in PostgreSQL)."""
    session_id, label, status, parent_id, memory, insight, turn_count, last_activity, turn_open = row
    digest = _new(SessionDigest)
    _set_id(digest, session_id)
    _set_label(digest, label)
    _set_status(digest, status)
    _set_parent_id(digest, parent_id)
    _set_memory(digest, memory)
    _set_insight(digest, insight)
    _set_turn_count(digest, turn_count)
    _set_last_activity(digest, last_activity)
    _set_turn_open(digest, turn_open == 1)
    _set_awaiting_approval(digest, 0)  # counted by the agent for the few sessions with an open turn
    return digest
