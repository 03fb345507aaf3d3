"""What `Agent` offers to erase for real: a session, a subtree, a whole space, and archived sessions past an age.

A base class of `Agent`. The store does the erase in one transaction (`stellate.store.erasure`); the agent
decides what to name, waits for running turns (``busy_timeout``), makes sure the events it published before are
in the event history first (so the erase takes them too), forgets its cached sessions and publishes one
`SessionErased` per erased session.
"""

from __future__ import annotations

from collections.abc import Sequence

from stellate.agent.image_store import refers_to_images, sweep_images_after_erase
from stellate.agent.parts import AgentParts
from stellate.engine.events import SessionErased
from stellate.errors import UsageError
from stellate.store import BaseStore, SessionId
from stellate.store.erasure import Dependents, ErasePlan, Tombstone

__all__ = ["AgentErasure"]


class AgentErasure(AgentParts):
    """Erasure; `Agent` provides the store, the session cache, the event bus and ``busy_timeout``."""

    async def plan_erase(
        self, session_id: str, *, subtree: bool = False, dependents: Dependents | None = None
    ) -> ErasePlan:
        """What `erase_session` would erase and keep now, erasing nothing (for a confirmation).

        Raises:
            NotFoundError: unknown session.
            HasDependentsError: sessions inherit from it and ``dependents`` is None.
        """
        store = await self.store()
        return await store.plan_erase(await self._named(store, session_id, subtree), dependents=dependents)

    async def erase_session(
        self,
        session_id: str,
        *,
        subtree: bool = False,
        dependents: Dependents | None = None,
        busy_timeout: float | None = None,
        by: str = "",
    ) -> ErasePlan:
        """Erase a session (with ``subtree``, its topology descendants too) and all that is stored of it.

        Events, record, slots, fold segments and event-history rows go, in one transaction; a tombstone without
        content stays (`list_tombstones`). Sessions that inherit part of their history from an erased one by
        reference are erased too (``cascade``) or first given their own copy of it (``keep``, O(their prefix)).

        Args:
            session_id: The session.
            subtree: Erase its topology descendants too.
            dependents: ``cascade``, ``keep``, or None to refuse when there are dependents.
            busy_timeout: Seconds to wait for a turn running on an erased session (here, in another process or
                on another worker); the agent's ``busy_timeout`` when None, 0 to answer `SessionBusyError` at once.
            by: Who erases, for the tombstones (an API key's id, a user name...).

        Raises:
            NotFoundError: unknown session.
            HasDependentsError: dependents exist and ``dependents`` is None (nothing was erased).
            SessionBusyError: a turn still ran after ``busy_timeout`` seconds (nothing was erased).
        """
        store = await self.store()
        named = await self._named(store, session_id, subtree)
        return await self._erase(store, named, dependents, busy_timeout, by)

    async def erase_space(self, *, busy_timeout: float | None = None, by: str = "") -> ErasePlan:
        """Erase every session of the agent's space (see `erase_session`); an empty space erases nothing."""
        store = await self.store()
        named = [r.id for r in await store.list_sessions()]
        if not named:
            return ErasePlan(erased=())
        return await self._erase(store, named, "cascade", busy_timeout, by)

    async def prune_sessions(
        self, older_than: float, *, dry_run: bool = False, busy_timeout: float | None = None, by: str = "prune"
    ) -> ErasePlan:
        """Erase archived sessions whose last activity is more than ``older_than`` seconds ago.

        Live sessions that inherit from a pruned one keep their own copy (``keep``); ``dry_run`` names what
        would go and erases nothing.

        Raises:
            UsageError: ``older_than`` is negative, not finite or absurdly large.
        """
        if not 0 <= older_than < 1e11:  # about 3,000 years; also refuses NaN and infinity
            raise UsageError("older_than must be a number of seconds from 0 to 1e11")
        store = await self.store()
        cutoff = store.clock() - round(older_than * 1000)
        named = [d.id for d in await store.list_digests() if d.status == "archived" and d.last_activity < cutoff]
        if not named:
            return ErasePlan(erased=())
        if dry_run:
            return await store.plan_erase([SessionId(s) for s in named], dependents="keep")
        return await self._erase(store, named, "keep", busy_timeout, by)

    async def list_tombstones(self) -> list[Tombstone]:
        """What remains of the erased sessions of the agent's space, oldest erase first."""
        return await (await self.store()).list_tombstones()

    async def _named(self, store: BaseStore, session_id: str, subtree: bool) -> list[SessionId]:
        if not subtree:
            return [SessionId(session_id)]
        return [r.id for r in await store.subtree(SessionId(session_id))]

    async def _erase(
        self,
        store: BaseStore,
        named: Sequence[str],
        dependents: Dependents | None,
        busy_timeout: float | None,
        by: str,
    ) -> ErasePlan:
        await self.events_recorded()  # history rows of what was published so far must exist to be erased
        wait = self.busy_timeout if busy_timeout is None else busy_timeout
        had_images = await refers_to_images(store, named)
        plan = await store.erase_sessions([SessionId(s) for s in named], dependents=dependents, by=by, wait=wait)
        await sweep_images_after_erase(store, had_images=had_images and bool(plan.erased))
        self._sessions.forget([*plan.erased, *plan.kept])
        for sid in plan.erased:
            await self.events.publish(SessionErased(session_id=sid, erased_by=by))
        await self.events_recorded()  # a client reading the history after the erase finds it there
        return plan
