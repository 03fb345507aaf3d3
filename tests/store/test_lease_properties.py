"""Stateful property test of the lease: random takes, renewals, releases, clock jumps and writes by three writers.

A model of the rules runs beside the real store: at every step the store's lease is the model's, and a write
lands exactly when the model says the writer may make it (the holder anything, others only free-standing slot
events while a lease is live, anyone when none is, a writer holding a superseded grant nothing).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from stellate.errors import SessionBusyError
from stellate.log import check_log, make_event
from stellate.store import BaseStore, SessionId
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore
from stellate.store.types import Lease

T = TypeVar("T")
SID = SessionId("s")
WRITERS = ("w1", "w2", "w3")
TTL = 5.0


class LeaseMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = tempfile.TemporaryDirectory()
        self.store: BaseStore = self.run(self._open())
        self.now = 1_000_000
        self.store.clock = lambda: self.now
        self.run(self.store.create_session(session_id=SID, events=[make_event("session/created", {"label": "s"})]))
        self.held: dict[str, Lease] = {}
        """The newest grant each writer got (it may since have lapsed, been released or been taken over)."""
        self.current: Lease | None = None
        """The model's view of the lease on the row."""

    async def _open(self) -> BaseStore:
        if self.backend == "memory":
            return MemoryStore()
        return await SqliteStore.open(str(Path(self.tmp.name) / "lease.db"))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.tmp.cleanup()

    def live(self) -> Lease | None:
        return self.current if self.current is not None and self.current.expires_at > self.now else None

    @rule(writer=st.sampled_from(WRITERS))
    def take(self, writer: str) -> None:
        if self.live() is not None:
            try:
                self.run(self.store.acquire_lease(SID, owner=writer, ttl=TTL))
            except SessionBusyError as exc:
                assert exc.details["holder"] == self.current.owner  # type: ignore[union-attr]
                return
            raise AssertionError("a live lease was granted twice")
        lease, _ = self.run(self.store.acquire_lease(SID, owner=writer, ttl=TTL))
        self.held[writer] = self.current = lease

    @rule(writer=st.sampled_from(WRITERS))
    def renew(self, writer: str) -> None:
        lease = self.held.get(writer)
        if lease is None:
            return
        if self.current is not None and self.current.token == lease.token:
            self.held[writer] = self.current = self.run(self.store.renew_lease(SID, lease, ttl=TTL))
            return
        try:
            self.run(self.store.renew_lease(SID, lease, ttl=TTL))
        except SessionBusyError as exc:
            assert exc.code == "lease_lost"
            return
        raise AssertionError("a superseded grant was renewed")

    @rule(writer=st.sampled_from(WRITERS))
    def release(self, writer: str) -> None:
        lease = self.held.get(writer)
        if lease is None:
            return
        self.run(self.store.release_lease(SID, lease))
        if self.current is not None and self.current.token == lease.token:
            self.current = None

    @rule(ms=st.integers(min_value=0, max_value=8000))
    def time_passes(self, ms: int) -> None:
        self.now += ms

    @rule(writer=st.sampled_from((*WRITERS, None)), slot=st.booleans(), with_lease=st.booleans())
    def write(self, writer: str | None, slot: bool, with_lease: bool) -> None:
        lease = self.held.get(writer) if writer is not None and with_lease else None
        events = (
            [make_event("memory/put", {"content": f"by {writer}"})]
            if slot
            else [make_event("label/set", {"label": "x"}), make_event("session/archived")]
        )
        if lease is not None:
            allowed = self.current is not None and self.current.token == lease.token
        else:
            allowed = slot or self.live() is None
        head = self.run(self.store.get_session(SID)).next_seq
        try:
            self.run(self.store.append(SID, events, lease=lease))
        except SessionBusyError:
            assert not allowed, "a permitted write was refused"
            assert self.run(self.store.get_session(SID)).next_seq == head
            return
        assert allowed, "a write the lease forbids landed"

    @invariant()
    def store_lease_is_the_models(self) -> None:
        assert self.run(self.store.get_session(SID)).lease == self.current

    @invariant()
    def log_stays_valid(self) -> None:
        check_log(self.run(self.store.read_events(SID)))


class SqliteLeaseMachine(LeaseMachine):
    backend = "sqlite"


_settings = settings(max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck))
TestMemoryLease = LeaseMachine.TestCase
TestMemoryLease.settings = _settings
TestSqliteLease = SqliteLeaseMachine.TestCase
TestSqliteLease.settings = _settings
