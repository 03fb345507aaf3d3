"""Erasing sessions for real: the plan (what goes, which dependents keep a copy) and the waiting rules.

A fork reads its source's prefix by reference, so a session's rows may hold part of other sessions' history.
Erasing it therefore either takes those dependents along (``cascade``) or first copies into each of them the
events it inherits (``keep``: the dependent then owns its whole log, at a cost of O(its prefix)); with neither,
`HasDependentsError` names them. A backend erases a plan in one transaction: the content (events, records,
fold segments, event-history rows, every side table) goes, and a `Tombstone` without content stays.

`ErasureStore` holds the shared rules over one primitive a backend implements (`ErasureStore._erase`).
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

from stellate.errors import HasDependentsError, NotFoundError, SessionBusyError, UsageError
from stellate.store.types import Lease, SessionId, SessionRecord

__all__ = [
    "Dependents",
    "ErasePlan",
    "ErasureStore",
    "Lineage",
    "Tombstone",
    "inherited_parts",
    "plan_erasure",
]

Dependents: TypeAlias = Literal["cascade", "keep"]
"""What becomes of sessions that inherit from an erased one: erased too, or given their own copy first."""

Lineage: TypeAlias = Mapping[SessionId, tuple[SessionId | None, int]]
"""Every session of a space, in creation order: id -> (fork source, number of events inherited from it)."""

_POLL_MAX = 0.2  # longest sleep between two tries of an erase waiting for a turn, in seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class Tombstone:
    """What remains of an erased session: its place in the topology and lineage, and who erased it when."""

    id: SessionId
    parent_id: SessionId | None
    """Topology parent it hung from (may itself be a tombstone)."""
    source_id: SessionId | None
    """Session its history came from."""
    fork_seq: int | None
    """Seq of the source it forked at."""
    created_at: int
    """Epoch ms the session was created."""
    erased_at: int
    """Epoch ms of the erase."""
    erased_by: str
    """Who erased it: an API key's id, a user, ``prune``... (as the caller said)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErasePlan:
    """What an erase takes and keeps, in creation order."""

    erased: tuple[SessionId, ...]
    """The sessions whose content goes (with ``cascade``, their dependents too)."""
    kept: tuple[SessionId, ...] = ()
    """Dependents that get their own copy of what they inherited (``keep``)."""
    scrubbed: bool = True
    """False when the freed bytes may still sit in the database's write-ahead log (SQLite: another process
    kept reading it; the next erase or checkpoint truncates it)."""


def _dependents_of(lineage: Lineage, sources: Collection[SessionId]) -> list[SessionId]:
    """Sessions outside ``sources`` that read events of one of them by reference (directly)."""
    return [sid for sid, (src, inherited) in lineage.items() if inherited and src in sources and sid not in sources]


def _closure(lineage: Lineage, targets: Collection[SessionId]) -> set[SessionId]:
    """``targets`` and every session that reads from them, through any number of forks."""
    taken = set(targets)
    while found := _dependents_of(lineage, taken):
        taken.update(found)
    return taken


def plan_erasure(lineage: Lineage, targets: Collection[SessionId], dependents: Dependents | None) -> ErasePlan:
    """What erasing ``targets`` takes and keeps (pure; backends call it inside their erase transaction).

    A session depends on an erased one when it inherits a prefix from it (``inherited > 0``); its own forks read
    through it, so with ``keep`` only the direct dependents need a copy.

    Raises:
        NotFoundError: a target is not a session of the space.
        HasDependentsError: dependents exist and ``dependents`` is None.
        UsageError: ``dependents`` is neither ``cascade``, ``keep`` nor None.
    """
    if dependents not in ("cascade", "keep", None):
        raise UsageError(f"dependents must be 'cascade' or 'keep', not {dependents!r}")
    for sid in targets:
        if sid not in lineage:
            raise NotFoundError(f"no session {sid!r}", session_id=sid)
    wanted = set(targets)
    if dependents == "cascade":
        wanted = _closure(lineage, wanted)
    kept = _dependents_of(lineage, wanted)
    if kept and dependents is None:
        others = sorted(_closure(lineage, wanted) - wanted, key=list(lineage).index)
        raise HasDependentsError(
            f"{len(others)} session(s) inherit from what would be erased; choose dependents='cascade' or 'keep'",
            session_ids=sorted(wanted),
            dependents=others,
        )
    return ErasePlan(erased=tuple(sid for sid in lineage if sid in wanted), kept=tuple(kept))


def inherited_parts(lineage: Lineage, session_id: SessionId) -> Iterator[tuple[SessionId, int, int]]:
    """Where the inherited prefix of ``session_id`` is stored: ``(holder, start, stop)``, newest part first."""
    source, stop = lineage[session_id]
    while source is not None and stop > 0:
        next_source, inherited = lineage[source]
        yield source, inherited, stop
        stop = min(stop, inherited)
        source = next_source if inherited else None


class ErasureStore(abc.ABC):
    """The erase half of `BaseStore`: waiting for running turns, then one backend transaction per erase."""

    clock: Callable[[], int]
    """Epoch-ms clock that lease expiry is judged by (set by `BaseStore`)."""

    @abc.abstractmethod
    async def get_session(self, session_id: SessionId) -> SessionRecord:
        """A session's record (raises `NotFoundError` when unknown)."""

    @abc.abstractmethod
    async def _erase(
        self, targets: tuple[SessionId, ...], dependents: Dependents | None, by: str, now: int, dry_run: bool
    ) -> ErasePlan:
        """Backend primitive: plan and carry out an erase in one transaction (``dry_run``: plan only).

        Lock, `plan_erasure` over the space's lineage, refuse a target a live lease holds (`SessionBusyError`),
        copy kept dependents' prefixes, delete every row of the erased sessions (events, record, fold segments,
        event-history rows, side tables), and write their tombstones.
        """

    @abc.abstractmethod
    async def list_tombstones(self) -> list[Tombstone]:
        """The space's tombstones, oldest erase first."""

    @abc.abstractmethod
    async def _holder_is_gone(self, lease: Lease) -> bool: ...

    @abc.abstractmethod
    async def _break_dead_lease(self, session_id: SessionId, lease: Lease) -> None: ...

    async def plan_erase(
        self, session_ids: Collection[SessionId], *, dependents: Dependents | None = None
    ) -> ErasePlan:
        """What `erase_sessions` would take and keep now, changing nothing (a dry run, a confirmation prompt).

        Raises:
            NotFoundError, HasDependentsError, UsageError: as `erase_sessions` would.
        """
        return await self._erase(_targets(session_ids), dependents, "", self._now(), True)

    async def erase_sessions(
        self,
        session_ids: Collection[SessionId],
        *,
        dependents: Dependents | None = None,
        by: str = "",
        wait: float = 0.0,
    ) -> ErasePlan:
        """Erase sessions and everything stored of them, leaving a tombstone each; all of it, or nothing.

        Args:
            session_ids: The sessions to erase (a subtree, a space, or one).
            dependents: For sessions inheriting from them by reference: ``cascade`` erases them too, ``keep``
                copies their inherited events into them first; None refuses when there are any.
            by: Who erases (recorded in the tombstones).
            wait: Seconds to wait while a turn runs on a session to erase (here or in another process) before
                `SessionBusyError`; 0 answers at once.

        Raises:
            NotFoundError: a session is unknown (nothing was erased).
            HasDependentsError: dependents exist and ``dependents`` is None.
            SessionBusyError: a turn still ran after ``wait`` seconds.
        """
        targets = _targets(session_ids)
        deadline, delay = time.monotonic() + wait, 0.01
        while True:
            try:
                plan = await self._erase(targets, dependents, by, self._now(), False)
            except SessionBusyError as exc:
                if await self._broke_dead_holder(exc):
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise
                await asyncio.sleep(min(delay, remaining))
                delay = min(delay * 2, _POLL_MAX)
                continue
            self._forget_lineage()
            return plan

    async def _broke_dead_holder(self, busy: SessionBusyError) -> bool:
        """Clear the lease of a holder whose process is known to be gone (a kill -9 mid-turn), as a turn would."""
        session_id = SessionId(str(busy.details.get("session_id", "")))
        try:
            lease = (await self.get_session(session_id)).lease
        except NotFoundError:
            return True
        if lease is None or not await self._holder_is_gone(lease):
            return False
        await self._break_dead_lease(session_id, lease)
        return True

    def _now(self) -> int:
        return self.clock()

    @abc.abstractmethod
    def _forget_lineage(self) -> None:
        """Drop cached lineage: kept dependents own their prefix now."""


def _targets(session_ids: Collection[SessionId]) -> tuple[SessionId, ...]:
    if isinstance(session_ids, str):
        raise UsageError("erase_sessions takes a collection of ids; wrap a single id in a list")
    targets = tuple(dict.fromkeys(SessionId(s) for s in session_ids))
    if not targets:
        raise UsageError("name at least one session to erase")
    return targets
