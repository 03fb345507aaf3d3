"""Prototypes of the fixes proposed for ``src/`` (docs/benchmarks.md), applied by monkeypatching.

Only the cases labelled "proposed fix(es) (prototype)" install them (in their own processes); every other row
measures ``src/`` as it is. Each patch is the smallest change that removes one cost found by profiling:

* ``no_refresh`` — `Agent._session` refreshes a cached session on every turn (`Session.refresh`: one
  ``get_session`` round trip through the store's thread, plus a read when another writer appended). The
  append's ``expected_seq`` check already catches another writer (`Session._flush` → `_rebase`), so the turn
  does not need it: about 0.24 ms of a 1.7 ms turn on SQLite (A/B in one process, 10 blocks of 40 turns).
* ``child_snapshot`` — since e7daec4 `Session._open` reuses the source's fold for a child only while
  ``source.history.next_seq == record.inherited``, but `Agent._fork` appends ``session/forked`` to the source
  right after creating the child, so through the Agent the condition never holds and the child's first turn
  still reads and folds its whole inherited prefix ("fork + 1 turn" is O(N)). Snapshotting the fold when the
  record is created (`History.fork`, before ``session/forked``) and opening the child from it fixes that.
* ``pg_marker_index`` — PostgreSQL: the store's fork looks up the last turn marker at or before the boundary
  (``type IN (...) ORDER BY seq DESC LIMIT 1``). With statistics not yet gathered for a session that grew
  fast (bulk import, a busy session), the planner picks a bitmap scan of the session's every event plus a
  sort (EXPLAIN ANALYZE: 55 ms for 100,000 events) instead of a backward index scan (0.04 ms after
  ``ANALYZE``). A partial index on the turn markers makes the cheap plan the only sensible one. (Since
  f6a62a6 a fork at the head reads its boundary off the cursor; a fork at a past boundary still queries.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stellate.session.session import Session

PATCHES = ("no_refresh", "child_snapshot", "pg_marker_index")


async def _no_refresh(self: Session) -> None:
    """`Session.refresh` as the prototype has it: nothing (conflicts are caught at the append)."""


_SNAPSHOTS: dict[str, Any] = {}
_original_fork_record = Session.fork_record
_original_open = Session._open.__func__  # type: ignore[attr-defined]


async def _fork_record(self: Session, **options: Any) -> Any:
    record = await _original_fork_record(self, **options)
    if record.inherited == self.history.next_seq and not self._pending:
        _SNAPSHOTS[record.id] = self.history.fork(weigh=self._weigh)  # before the source moves on
    return record


async def _open(cls: type[Session], store: Any, record: Any, runtime: Any, *, source: Any = None) -> Session:
    snapshot = _SNAPSHOTS.pop(record.id, None)
    if snapshot is None:
        return await _original_open(cls, store, record, runtime, source=source)  # type: ignore[no-any-return]
    session = cls(store, record, runtime)
    session.history = snapshot
    session.history.absorb(await store.read_events(record.id, start=record.inherited))
    return session


def _install_pg_marker_index() -> None:
    from stellate.store import postgres

    original = postgres.PostgresStore._setup

    async def setup(self: Any, conn: Any, migrate: bool) -> None:
        await original(self, conn, migrate)
        await conn.execute(
            "CREATE INDEX IF NOT EXISTS events_turn_markers ON events (session_id, seq)"
            " WHERE type IN ('turn/start', 'turn/end')"
        )

    postgres.PostgresStore._setup = setup  # type: ignore[method-assign]


def apply(names: Sequence[str] = PATCHES) -> None:
    """Install the named prototypes (all by default)."""
    for name in names:
        if name == "no_refresh":
            Session.refresh = _no_refresh  # type: ignore[method-assign]
        elif name == "child_snapshot":
            Session.fork_record = _fork_record  # type: ignore[method-assign]
            Session._open = classmethod(_open)  # type: ignore[method-assign,assignment]
        elif name == "pg_marker_index":
            _install_pg_marker_index()
        else:
            raise ValueError(f"unknown patch {name!r}; choose from {PATCHES}")
