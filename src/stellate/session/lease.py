"""Holding one session's lease for a `Session`: take it, renew it while held, give it back.

The store keeps the lease and fences every write by it (`stellate.store.BaseStore.acquire_lease`); this is the
writer's side: a heartbeat renews the lease every third of its ttl, and a lease that could not be given back
(the store was busy) is renewed and reused by the next take instead of blocking this same writer until it lapses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from stellate import observability
from stellate.errors import SessionBusyError, StellateError
from stellate.session.types import SessionRuntime
from stellate.store.base import BaseStore
from stellate.store.types import Lease, SessionId, SessionRecord

__all__ = ["LeaseHolder"]

_log = observability.get_logger(__name__)


class LeaseHolder:
    """One session's lease, as one writer holds it."""

    def __init__(self, store: BaseStore, session_id: SessionId, runtime: SessionRuntime) -> None:
        self._store = store
        self._session_id = session_id
        self._runtime = runtime
        self.current: Lease | None = None
        """The lease while held (renewed in place by the heartbeat), else None."""
        self.ends_with_turn = False
        """Whether the closing write of the next turn gives the lease back (set by whoever took it)."""
        self._unreleased: Lease | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._log_extra = {"session_id": session_id}

    async def take(self, wait: float, on_wait: Callable[[Lease | None], None] | None = None) -> SessionRecord:
        """Take the lease (waiting up to ``wait`` seconds) and start renewing it; the record as of the grant.

        Args:
            wait: Seconds to wait for another writer's lease to end.
            on_wait: Told once, with the other writer's lease, when the take has to wait for it.

        Raises:
            SessionBusyError: another writer still holds it after ``wait`` seconds.
        """
        runtime = self._runtime
        lease, record = await self._reclaim() or await self._store.acquire_lease(
            self._session_id, owner=runtime.lease_owner, ttl=runtime.lease_ttl, wait=wait, on_wait=on_wait
        )
        self.current = lease
        # A timer, not a task, until the first renewal is due: most turns end (and cancel it) well before that.
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(runtime.lease_ttl / 3, self._start_keeping, lease.token)
        return record

    async def give_back(self) -> None:
        """Stop renewing and release the lease (kept for reuse when the store refuses the release)."""
        held = self.current
        self.released()
        if held is not None:
            await asyncio.shield(self._release(held))

    def released(self) -> None:
        """Forget the lease: a write released it in the store (``release_lease``), or `give_back` does now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        self.current, self.ends_with_turn = None, False

    def _start_keeping(self, token: str) -> None:
        self._timer = None
        if self.current is not None and self.current.token == token:
            loop = asyncio.get_running_loop()
            self._heartbeat = loop.create_task(self._keep(token), name=f"lease {self._session_id}")

    async def _keep(self, token: str) -> None:
        """Renew now (a third of the ttl after the take), then every third of the ttl while the lease is held."""
        ttl = self._runtime.lease_ttl
        due = True
        while True:
            if not due:
                await asyncio.sleep(ttl / 3)
            due = False
            lease = self.current
            if lease is None or lease.token != token:
                return
            try:
                renewed = await self._store.renew_lease(self._session_id, lease, ttl=ttl)
            except SessionBusyError:
                _log.warning(
                    "session %s: lease lost; this writer's next write will be refused",
                    self._session_id,
                    extra=self._log_extra,
                )
                return
            except StellateError as exc:  # a passing store failure: the lease outlives two more beats
                _log.warning(
                    "session %s: lease renewal failed (%s); retrying", self._session_id, exc, extra=self._log_extra
                )
                continue
            if self.current is not None and self.current.token == token:
                self.current = renewed

    async def _release(self, lease: Lease) -> None:
        try:
            await self._store.release_lease(self._session_id, lease)
        except StellateError as exc:  # it lapses by itself: only the next writer's wait gets longer
            _log.warning(
                "session %s: lease release failed (%s); it lapses at %d",
                self._session_id,
                exc,
                lease.expires_at,
                extra=self._log_extra,
            )
            self._unreleased = lease

    async def _reclaim(self) -> tuple[Lease, SessionRecord] | None:
        """Renew the lease this writer could not release, so it need not wait for it to lapse.

        Returns:
            The renewed lease and the session's record; None when there is none or another writer took it since.
        """
        stale = self._unreleased
        if stale is None:
            return None
        try:
            lease = await self._store.renew_lease(self._session_id, stale, ttl=self._runtime.lease_ttl)
        except SessionBusyError:  # taken over since: forget it (any other failure keeps it for the next try)
            self._unreleased = None
            return None
        self._unreleased = None
        return lease, await self._store.get_session(self._session_id)
