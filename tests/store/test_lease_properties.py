"""Stateful property test of the lease: random takes, renewals, releases, clock jumps and writes by three writers.

A model of the rules runs beside the real store: at every step the store's lease is the model's, and a write
lands exactly when the model says the writer may make it (the holder anything, others only free-standing slot
events while a lease is live, anyone when none is, a writer holding a superseded grant nothing). A holder
appending from its own last known head lands at the real head when only free-standing events came between,
and gets ``seq_conflict`` otherwise.
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

from stellate.errors import ConflictError, SessionBusyError
from stellate.log import check_log, make_event
from stellate.log.events import FREE_STANDING_TYPES
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
        self.types = ["session/created"]
        """The model's view of the log: its event types, in order."""
        self.known: dict[str, int] = {}
        """The head each writer saw at its last take or write (its expected seq for the next one)."""

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
        self.known[writer] = len(self.types)

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
        self.types.extend(e.type for e in events)
        if writer is not None:
            self.known[writer] = len(self.types)

    @rule(writer=st.sampled_from(WRITERS), slot=st.booleans())
    def holder_appends_from_its_head(self, writer: str, slot: bool) -> None:
        lease, expected = self.held.get(writer), self.known.get(writer)
        if lease is None or expected is None or self.current is None or self.current.token != lease.token:
            return
        events = [make_event("memory/put", {"content": "held"})] if slot else [make_event("session/archived")]
        head = len(self.types)
        fits = all(t in FREE_STANDING_TYPES for t in self.types[expected:head])
        try:
            written = self.run(self.store.append(SID, events, expected_seq=expected, lease=lease))
        except ConflictError as exc:
            assert not fits and exc.code == "seq_conflict", "a batch past free-standing events only was refused"
            return
        assert fits, "a batch landed past a turn's or an archive's event"
        assert [e.seq for e in written] == list(range(head, head + len(events)))
        self.types.extend(e.type for e in events)
        self.known[writer] = len(self.types)

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
