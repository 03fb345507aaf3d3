"""The PostgreSQL half of an erase (`stellate.store.erasure`): one transaction over row locks.

The rows of every session the erase takes or keeps are locked (``FOR UPDATE``, in id order) before the plan is
made again from the committed lineage, so a fork that committed first is in the plan and a fork that comes
after finds its source gone (a new session's insert locks its source and parent ``FOR SHARE``, see
`lock_lineage`). Deleted rows stay in the table's pages until VACUUM reclaims them (docs/store.md).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import TupleRow

from stellate.errors import ForkError, NotFoundError
from stellate.store._batch import busy_error
from stellate.store._erase_sql import copy_events_sql, insert_tombstone_sql, lineage_sql
from stellate.store.erasure import Dependents, ErasePlan, Lineage, inherited_parts, plan_erasure
from stellate.store.types import Lease, SessionId, SessionRecord

__all__ = ["SESSION_ERASERS", "erase", "lock_lineage"]

Connection = psycopg.AsyncConnection[TupleRow]

#: Everything PostgreSQL keeps of one session besides its record, each statement taking the session's id: the
#: one list to extend when a table that holds a session's content is added.
SESSION_ERASERS: tuple[str, ...] = (
    "DELETE FROM events WHERE session_id = %s",
    "DELETE FROM fold_segments WHERE session_id = %s",
    # History rows are opaque JSON written by the agent: a row naming the session (as a JSON string) goes.
    "DELETE FROM event_history WHERE strpos(data, '\"' || %s::text || '\"') > 0",
    "DELETE FROM claims WHERE key = 'consolidate:' || %s::text",
)
_LINEAGE = lineage_sql("%s")
_COPY_EVENTS = copy_events_sql("%s")
_INSERT_TOMBSTONE = insert_tombstone_sql("%s")
_DELETE_RECORD = "DELETE FROM sessions WHERE id = %s AND space = %s"
_UNINHERIT = "UPDATE sessions SET inherited = 0 WHERE id = %s"
_LOCK = (
    "SELECT id, lease_owner, lease_token, lease_acquired_at, lease_expires_at FROM sessions"
    " WHERE id = ANY(%s) AND space = %s ORDER BY id FOR UPDATE"
)
_SHARE = "SELECT id FROM sessions WHERE id = ANY(%s) AND space = %s ORDER BY id FOR SHARE"


async def lock_lineage(conn: Connection, record: SessionRecord, space: str) -> None:
    """Inside a new session's insert: lock its fork source and topology parent, which must still exist.

    Raises:
        ForkError: ``source_not_found`` for a fork by reference whose source was erased.
        NotFoundError: the topology parent was erased.
    """
    wanted = {sid for sid in (record.source_id if record.inherited else None, record.parent_id) if sid is not None}
    if not wanted:
        return
    found = {row[0] for row in await (await conn.execute(_SHARE, (sorted(wanted), space))).fetchall()}
    if record.inherited and record.source_id not in found:
        raise ForkError(f"fork source {record.source_id!r} does not exist", code="source_not_found")
    if record.parent_id is not None and record.parent_id not in found:
        raise NotFoundError(f"no session {record.parent_id!r}", session_id=record.parent_id)


async def _lineage(conn: Connection, space: str) -> Lineage:
    rows = await (await conn.execute(_LINEAGE, (space,))).fetchall()
    return {SessionId(sid): (SessionId(src) if src else None, int(n)) for sid, src, n in rows}


async def _lock_plan(
    conn: Connection, space: str, targets: tuple[SessionId, ...], dependents: Dependents | None
) -> tuple[ErasePlan, Lineage, list[Any]]:
    """Lock the plan's rows, then plan again from the committed lineage until no new session joined it."""
    plan = plan_erasure(await _lineage(conn, space), targets, dependents)
    locked: set[SessionId] = set()
    rows: list[Any] = []
    while True:
        wanted = set(plan.erased) | set(plan.kept)
        if not wanted <= locked:
            rows = await (await conn.execute(_LOCK, (sorted(wanted | locked), space))).fetchall()
            locked |= wanted
        lineage = await _lineage(conn, space)
        again = plan_erasure(lineage, targets, dependents)
        if set(again.erased) | set(again.kept) <= locked:
            return again, lineage, rows
        plan = again


def _check_leases(plan: ErasePlan, rows: list[Any], now: int) -> None:
    erased = set(plan.erased)
    for sid, owner, token, acquired_at, expires_at in rows:
        if sid in erased and token is not None:
            lease = Lease(owner=owner, token=token, acquired_at=acquired_at, expires_at=expires_at)
            if lease.is_live(now):
                raise busy_error(sid, lease, now)


async def erase(
    conn: Connection,
    *,
    space: str,
    targets: tuple[SessionId, ...],
    dependents: Dependents | None,
    by: str,
    now: int,
    dry_run: bool,
) -> ErasePlan:
    """Plan and (unless ``dry_run``) carry out an erase, inside the caller's transaction."""
    plan, lineage, rows = await _lock_plan(conn, space, targets, dependents)
    _check_leases(plan, rows, now)
    if dry_run:
        return plan
    for sid in plan.kept:
        for holder, start, stop in inherited_parts(lineage, sid):
            await conn.execute(_COPY_EVENTS, (sid, holder, start, stop))
        await conn.execute(_UNINHERIT, (sid,))
    for sid in plan.erased:
        for statement in SESSION_ERASERS:
            await conn.execute(statement, (sid,))
        await conn.execute(_INSERT_TOMBSTONE, (now, by, sid, space))
        await conn.execute(_DELETE_RECORD, (sid, space))
    return plan
