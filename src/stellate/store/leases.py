"""Leases and claims: one writer per session, and background work done once, across processes.

`LeaseStore` holds the rules (waiting, expiry, renewal, fencing errors) over a handful of atomic primitives a
backend implements; `BaseStore` inherits it, so every backend gets the same behaviour.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import replace

from stellate.errors import UsageError
from stellate.store._batch import busy_error
from stellate.store.liveness import holder_is_gone, new_lease_token
from stellate.store.types import Claim, Lease, SessionId, SessionRecord

__all__ = ["DEFAULT_LEASE_TTL", "LeaseStore", "lease_owner"]

#: Seconds a lease lasts unless renewed; holders renew it well inside this (every third of it).
DEFAULT_LEASE_TTL = 30.0
_POLL_MAX = 0.1  # longest sleep between two tries of a waiting writer, in seconds
_log = logging.getLogger(__name__)


def lease_owner(name: str = "") -> str:
    """An owner id for leases: this host and process, then ``name`` (e.g. an agent's id)."""
    base = f"{socket.gethostname()}:{os.getpid()}"
    return f"{base}:{name}" if name else base


class LeaseStore(abc.ABC):
    """The lease and claim half of `BaseStore`: shared rules over a backend's atomic primitives."""

    clock: Callable[[], int]
    """Epoch-ms clock that lease and claim expiry is judged by (set by `BaseStore`)."""

    @abc.abstractmethod
    async def get_session(self, session_id: SessionId) -> SessionRecord:
        """A session's record (raises `NotFoundError` when unknown)."""

    # -- primitives a backend implements ---------------------------------------------------------

    @abc.abstractmethod
    async def _take_lease(self, session_id: SessionId, lease: Lease, now: int) -> SessionRecord | None:
        """Grant ``lease`` atomically unless a lease live at ``now`` is on the session; the record after, or None."""

    @abc.abstractmethod
    async def _renew_lease(self, session_id: SessionId, token: str, expires_at: int) -> bool:
        """Move the expiry of the grant with ``token``; False when that grant is no longer on the session."""

    @abc.abstractmethod
    async def _release_lease(self, session_id: SessionId, token: str) -> None:
        """Clear the grant with ``token`` (nothing when another grant replaced it)."""

    @abc.abstractmethod
    async def _try_claim(self, claim: Claim, now: int) -> bool:
        """Record ``claim`` unless a claim of its key is live at ``now``; whether it was recorded."""

    @abc.abstractmethod
    async def _release_claim(self, key: str, token: str) -> None:
        """Drop the claim of ``key`` if it still has ``token``."""

    # -- leases: one writer per session, across processes ---------------------------------------

    async def acquire_lease(
        self,
        session_id: SessionId,
        *,
        owner: str,
        ttl: float = DEFAULT_LEASE_TTL,
        wait: float = 0.0,
        on_wait: Callable[[Lease | None], None] | None = None,
    ) -> tuple[Lease, SessionRecord]:
        """Take the session's lease, waiting up to ``wait`` seconds while another writer holds a live one.

        A lease whose holder stopped renewing it (a crashed process) lapses ``ttl`` seconds after its last
        renewal and can then be taken. A holder on this host whose process is known to be gone (see
        `stellate.store.liveness`) is taken over at once.

        Args:
            session_id: The session.
            owner: Who takes it (shown to writers kept out).
            ttl: Seconds the lease lasts unless renewed.
            wait: Seconds to wait for a live holder.
            on_wait: Called once, with the holder's lease, when the call is about to wait for it (so a caller
                can say who it waits for).

        Returns:
            The new lease and the session's record as of the grant.

        Raises:
            NotFoundError: unknown session.
            SessionBusyError: still held by another writer after ``wait`` seconds (code ``session_busy``).
            UsageError: ``ttl`` is not positive or ``wait`` is negative.
        """
        if ttl <= 0 or wait < 0:
            raise UsageError(f"a lease needs ttl > 0 and wait >= 0 (got ttl={ttl}, wait={wait})")
        deadline, delay = time.monotonic() + wait, 0.005
        while True:
            now = self.clock()
            token = await self._new_lease_token()
            lease = Lease(owner=owner, token=token, acquired_at=now, expires_at=now + round(ttl * 1000))
            record = await self._take_lease(session_id, lease, now)
            if record is not None:
                return lease, record
            current = await self.get_session(session_id)
            if current.lease is not None and await self._holder_is_gone(current.lease):
                await self._break_dead_lease(session_id, current.lease)
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise busy_error(session_id, current.lease, now)
            if on_wait is not None:
                on_wait(current.lease)
                on_wait = None
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, _POLL_MAX)

    async def _new_lease_token(self) -> str:
        """A token for a new lease, stamped with what tells its holder's death (see `stellate.store.liveness`)."""
        return new_lease_token()

    async def _holder_is_gone(self, lease: Lease) -> bool:
        """Whether the holder of ``lease`` is known to be dead (a backend may know more than this host's pids)."""
        return holder_is_gone(lease.token)

    async def _break_dead_lease(self, session_id: SessionId, lease: Lease) -> None:
        """Clear a lease whose holder's process is gone (only if it is still that grant), so it is taken at once."""
        _log.warning(
            "session %s: the lease holder %s is gone (its process ended); taking over without waiting for the lease",
            session_id,
            lease.owner,
            extra={"session_id": session_id},
        )
        await self._release_lease(session_id, lease.token)

    async def renew_lease(self, session_id: SessionId, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend a held lease to ``ttl`` seconds from now and return it.

        Raises:
            SessionBusyError: the lease lapsed and another writer took it, or it was released (``lease_lost``).
        """
        renewed = replace(lease, expires_at=self.clock() + round(ttl * 1000))
        if not await self._renew_lease(session_id, lease.token, renewed.expires_at):
            current = await self.get_session(session_id)
            raise busy_error(session_id, current.lease, self.clock(), lost=True)
        return renewed

    async def release_lease(self, session_id: SessionId, lease: Lease) -> None:
        """Give a lease back; nothing happens when it was already taken over or released."""
        await self._release_lease(session_id, lease.token)

    # -- claims: background work done once across processes --------------------------------------

    async def claim(self, key: str, *, owner: str, ttl: float) -> Claim | None:
        """Claim the background work named ``key`` for ``ttl`` seconds; None while another live claim holds it.

        Raises:
            UsageError: ``ttl`` is not positive or ``key`` is empty.
        """
        if ttl <= 0 or not key:
            raise UsageError(f"a claim needs a key and ttl > 0 (got key={key!r}, ttl={ttl})")
        now = self.clock()
        claim = Claim(key=key, owner=owner, token=uuid.uuid4().hex, expires_at=now + round(ttl * 1000))
        return claim if await self._try_claim(claim, now) else None

    async def release_claim(self, claim: Claim) -> None:
        """Drop a claim (nothing happens when it lapsed and another process claimed the work since)."""
        await self._release_claim(claim.key, claim.token)
