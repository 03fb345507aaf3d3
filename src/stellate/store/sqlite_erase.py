"""The SQLite half of an erase (`stellate.store.erasure`): one write transaction, then the file scrubbed.

The transaction runs with ``PRAGMA secure_delete`` on, so SQLite overwrites the freed content with zeros (every
connection zeroes freed cells at all times, at least with ``FAST``, so older versions of a slot are gone too), and
the WAL is then checkpointed with ``TRUNCATE``: the zeroed pages reach the database file and the log that held
the old frames is cut to nothing. Foreign keys are off for the transaction only, because a surviving child may
hang from an erased parent (it then reads as a root; its ``parent_id`` still names the tombstone).
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import replace

from stellate.errors import ForkError, NotFoundError
from stellate.store._batch import busy_error
from stellate.store._erase_sql import copy_events_sql, insert_tombstone_sql, lineage_sql
from stellate.store.erasure import Dependents, ErasePlan, Lineage, inherited_parts, plan_erasure
from stellate.store.sqlite_connections import WriteTransaction, translate
from stellate.store.sqlite_search import SEARCH_ERASERS, index_copied, scrub_search_text
from stellate.store.types import Lease, SessionId, SessionRecord

__all__ = ["SESSION_ERASERS", "check_lineage_exists", "erase_sync"]

_log = logging.getLogger(__name__)

#: Everything SQLite keeps of one session besides its record, each statement taking the session's id: the one
#: list to extend when a table that holds a session's content is added.
SESSION_ERASERS: tuple[str, ...] = (
    *SEARCH_ERASERS,  # before the events: the search index's rows are deleted by giving their text back
    "DELETE FROM events WHERE session_id = ?",
    "DELETE FROM fold_segments WHERE session_id = ?",
    # History rows are opaque JSON written by the agent: a row naming the session (as a JSON string) goes.
    "DELETE FROM event_history WHERE instr(data, '\"' || ? || '\"') > 0",
    "DELETE FROM claims WHERE key = 'consolidate:' || ?",
)
_COPY_EVENTS = copy_events_sql("?")
_INSERT_TOMBSTONE = insert_tombstone_sql("?")
_DELETE_RECORD = "DELETE FROM sessions WHERE id = ? AND space = ?"
_SELECT_LEASE = "SELECT lease_owner, lease_token, lease_acquired_at, lease_expires_at FROM sessions WHERE id = ?"
_UNINHERIT = "UPDATE sessions SET inherited = 0 WHERE id = ?"
_EXISTS = "SELECT 1 FROM sessions WHERE id = ? AND space = ?"
_SECURE_DELETE = {0: "OFF", 1: "ON", 2: "FAST"}  # what ``PRAGMA secure_delete`` reads -> what it is set with


def check_lineage_exists(db: sqlite3.Connection, record: SessionRecord, space: str) -> None:
    """Inside a new session's insert: its fork source and topology parent still exist (an erase may have won).

    Raises:
        ForkError: ``source_not_found`` for a fork by reference whose source is gone.
        NotFoundError: the topology parent is gone.
    """
    if record.inherited and not db.execute(_EXISTS, (record.source_id, space)).fetchone():
        raise ForkError(f"fork source {record.source_id!r} does not exist", code="source_not_found")
    if record.parent_id is not None and not db.execute(_EXISTS, (record.parent_id, space)).fetchone():
        raise NotFoundError(f"no session {record.parent_id!r}", session_id=record.parent_id)


def erase_sync(
    db: sqlite3.Connection,
    *,
    space: str,
    targets: tuple[SessionId, ...],
    dependents: Dependents | None,
    by: str,
    now: int,
    dry_run: bool,
) -> ErasePlan:
    """Plan and (unless ``dry_run``) carry out an erase on the store thread's connection."""
    if dry_run:
        return _plan(db, space, targets, dependents, now)
    usual = _SECURE_DELETE[int(db.execute("PRAGMA secure_delete").fetchone()[0])]
    try:
        db.execute("PRAGMA foreign_keys = OFF")
        db.execute("PRAGMA secure_delete = ON")
        with WriteTransaction(db):
            plan = _plan(db, space, targets, dependents, now)
            _erase_planned(db, space, plan, _lineage(db, space), by, now)
    finally:
        db.execute(f"PRAGMA secure_delete = {usual}")  # the connection's own setting (sqlite_connections)
        db.execute("PRAGMA foreign_keys = ON")
    return replace(plan, scrubbed=checkpoint_truncate(db))


def _lineage(db: sqlite3.Connection, space: str) -> Lineage:
    rows = db.execute(lineage_sql("?"), (space,))
    return {SessionId(sid): (SessionId(src) if src else None, n) for sid, src, n in rows}


def _plan(
    db: sqlite3.Connection, space: str, targets: tuple[SessionId, ...], dependents: Dependents | None, now: int
) -> ErasePlan:
    try:
        plan = plan_erasure(_lineage(db, space), targets, dependents)
        for sid in plan.erased:
            row = db.execute(_SELECT_LEASE, (sid,)).fetchone()
            if row is not None and row[1] is not None:
                lease = Lease(owner=row[0], token=row[1], acquired_at=row[2], expires_at=row[3])
                if lease.is_live(now):
                    raise busy_error(sid, lease, now)
    except sqlite3.Error as exc:
        raise translate(exc, "cannot plan the erase") from exc
    return plan


def _erase_planned(db: sqlite3.Connection, space: str, plan: ErasePlan, lineage: Lineage, by: str, now: int) -> None:
    """Copy the kept dependents' prefixes, then delete every row of the erased sessions, tombstones left."""
    for sid in plan.kept:
        for holder, start, stop in inherited_parts(lineage, sid):
            db.execute(_COPY_EVENTS, (sid, holder, start, stop))
            index_copied(db, sid, start, stop)  # the copy is the dependent's own now: its messages are found there
        db.execute(_UNINHERIT, (sid,))
    for sid in plan.erased:
        for statement in SESSION_ERASERS:
            db.execute(statement, (sid,))
        db.execute(_INSERT_TOMBSTONE, (now, by, sid, space))
        db.execute(_DELETE_RECORD, (sid, space))
    if plan.erased:
        scrub_search_text(db)  # what the deleted messages left in the search index goes too


def checkpoint_truncate(db: sqlite3.Connection) -> bool:
    """Copy the WAL into the file and cut it to zero bytes; False when a reader elsewhere kept it in use."""
    try:
        row = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        _log.warning("the WAL could not be truncated after an erase: %s", exc)
        return False
    return row is None or row[0] == 0
