"""The `Store` protocol: where session logs live, as the layers above see it.

`stellate.store.base.BaseStore` implements it once over a backend's primitives; a test double may implement it
directly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol, runtime_checkable

from stellate.log.events import Event, NewEvent
from stellate.store.digests import SessionDigest, TopologyNode
from stellate.store.erasure import Dependents, ErasePlan, Tombstone
from stellate.store.leases import DEFAULT_LEASE_TTL
from stellate.store.types import ForkRequest, Lease, SessionId, SessionRecord

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """Where session logs live. Every method is atomic; a refused write changes nothing."""

    async def create_session(
        self,
        *,
        session_id: SessionId | None = None,
        parent_id: SessionId | None = None,
        fork: ForkRequest | None = None,
        events: Sequence[NewEvent] = (),
        source_id: SessionId | None = None,
        fork_seq: int | None = None,
    ) -> SessionRecord:
        """Create a session, optionally inheriting a prefix of another by reference, with its first events."""
        ...

    async def append(
        self,
        session_id: SessionId,
        events: Sequence[NewEvent],
        *,
        expected_seq: int | None = None,
        lease: Lease | None = None,
    ) -> list[Event]:
        """Append a batch atomically; ``expected_seq`` guards against stale writers, ``lease`` proves ownership."""
        ...

    async def acquire_lease(
        self,
        session_id: SessionId,
        *,
        owner: str,
        ttl: float = DEFAULT_LEASE_TTL,
        wait: float = 0.0,
        on_wait: Callable[[Lease | None], None] | None = None,
    ) -> tuple[Lease, SessionRecord]:
        """Take the session's lease (waiting up to ``wait`` seconds for a live one to end; ``on_wait`` is told)."""
        ...

    async def renew_lease(self, session_id: SessionId, lease: Lease, *, ttl: float = DEFAULT_LEASE_TTL) -> Lease:
        """Extend a held lease by ``ttl`` seconds from now."""
        ...

    async def release_lease(self, session_id: SessionId, lease: Lease) -> None:
        """Give a lease back (nothing happens when it was already taken over)."""
        ...

    async def read_events(
        self,
        session_id: SessionId,
        *,
        start: int = 0,
        stop: int | None = None,
        types: Sequence[str] | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> list[Event]:
        """Events with ``start <= seq < stop`` (inherited prefix included), optionally by type, newest first."""
        ...

    async def get_session(self, session_id: SessionId) -> SessionRecord:
        """A session's record; raises `NotFoundError` when unknown."""
        ...

    async def list_sessions(self, *, parent_id: SessionId | None = None, roots: bool = False) -> list[SessionRecord]:
        """All sessions in creation order, or the children of ``parent_id``, or the roots."""
        ...

    async def list_digests_page(
        self,
        *,
        after: SessionId | None = None,
        limit: int = 100,
        parent_id: SessionId | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """Up to ``limit`` digests in creation order after the session ``after`` (from the first without it).

        Optionally only the children of ``parent_id``, or only those of ``status``. A keyset page: its cost
        follows the page, not the forest; pages concatenate to `list_digests` (sessions created meanwhile come
        at the end, an archived session keeps its place). Raises `UsageError` (``bad_cursor``) when ``after``
        names no session of this space (erased, or never one).
        """
        ...

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """Up to ``limit`` records in creation order after the session ``after``: a keyset page of `list_sessions`.

        Same rules as `list_digests_page` (``bad_cursor`` for an ``after`` that names no session of this space).
        """
        ...

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """Up to ``limit`` childless topology nodes in creation order after ``after`` (a parent before its children).

        Same rules as `list_digests_page`; the forest's map reads these without any session's full record.
        """
        ...

    async def repair(self, session_id: SessionId, *, lease: Lease | None = None) -> list[Event]:
        """Close a turn left open by a dead writer; returns the events appended (none on a closed log)."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...

    async def erase_sessions(
        self,
        session_ids: Collection[SessionId],
        *,
        dependents: Dependents | None = None,
        by: str = "",
        wait: float = 0.0,
    ) -> ErasePlan:
        """Erase sessions and all that is stored of them in one transaction, leaving content-free tombstones."""
        ...

    async def plan_erase(
        self, session_ids: Collection[SessionId], *, dependents: Dependents | None = None
    ) -> ErasePlan:
        """What `erase_sessions` would take and keep, changing nothing."""
        ...

    async def list_tombstones(self) -> list[Tombstone]:
        """What remains of the space's erased sessions, oldest erase first."""
        ...
