"""Stateful property tests of erasure: random forests of forks by reference, turns and erases (cascade, keep, or
no choice) leave every surviving session reading exactly the log it had, and nothing of the erased ones."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from stellate.errors import HasDependentsError, NotFoundError
from stellate.log import make_event
from stellate.store import BaseStore, Boundary, ForkRequest, SessionId
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore
from stellate.testing.contract_support import turn

T = TypeVar("T")
Logged = list[tuple[str, str]]


class EraseMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = tempfile.TemporaryDirectory()
        self.store: BaseStore = self.run(self._open())
        self.expected: dict[SessionId, Logged] = {}
        """What each live session must read: (type, data) of its whole log, inherited prefix included."""
        self.sources: dict[SessionId, SessionId | None] = {}
        self.erased: set[SessionId] = set()
        self.count = 0

    async def _open(self) -> BaseStore:
        if self.backend == "memory":
            return MemoryStore()
        return await SqliteStore.open(str(Path(self.tmp.name) / "erase.db"))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.tmp.cleanup()

    def _new_id(self) -> SessionId:
        self.count += 1
        return SessionId(f"s{self.count}")

    @staticmethod
    def _logged(events: list[Any]) -> Logged:
        return [(e.type, json.dumps(e.data, sort_keys=True)) for e in events]

    @initialize()
    def two_roots(self) -> None:
        self.new_root()
        self.new_root()

    @rule()
    def new_root(self) -> None:
        sid = self._new_id()
        first = make_event("session/created", {"label": sid})
        self.run(self.store.create_session(session_id=sid, events=[first]))
        self.expected[sid] = self._logged(self.run(self.store.read_events(sid)))
        self.sources[sid] = None

    @precondition(lambda self: self.expected)
    @rule(data=st.data())
    def add_turn(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(sorted(self.expected)))
        number = self.run(self.store.get_session(sid)).turn_count + 1
        written = self.run(self.store.append(sid, turn(number, user=f"{sid} says {number}")))
        self.expected[sid] += self._logged(written)

    @precondition(lambda self: self.expected)
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        source = data.draw(st.sampled_from(sorted(self.expected)))
        log = self.expected[source]
        ends = [seq for seq, (kind, _) in enumerate(log) if kind in ("turn/end", "session/created")]
        boundary = data.draw(st.sampled_from(ends))
        child = self._new_id()
        request = ForkRequest(source_id=source, point=Boundary(seq=boundary))
        self.run(self.store.create_session(session_id=child, parent_id=source, fork=request))
        self.expected[child] = log[: boundary + 1]
        self.sources[child] = source

    @precondition(lambda self: self.expected)
    @rule(data=st.data(), dependents=st.sampled_from([None, "cascade", "keep"]), subtree=st.booleans())
    def erase(self, data: st.DataObject, dependents: str | None, subtree: bool) -> None:
        target = data.draw(st.sampled_from(sorted(self.expected)))
        named = [r.id for r in self.run(self.store.subtree(target))] if subtree else [target]
        taken = self._closure(set(named))
        try:
            plan = self.run(self.store.erase_sessions(named, dependents=dependents))  # type: ignore[arg-type]
        except HasDependentsError as error:
            event("erase refused: dependents")
            assert dependents is None and set(error.details["dependents"]) == taken - set(named)
            return
        event(f"erase {dependents}: kept {'some' if plan.kept else 'none'}, took {min(len(plan.erased), 2)}")
        wanted = taken if dependents == "cascade" else set(named)
        assert set(plan.erased) == wanted
        assert dependents is not None or taken == set(named)
        for sid in plan.erased:
            del self.expected[sid]
            self.erased.add(sid)

    def _closure(self, named: set[SessionId]) -> set[SessionId]:
        """``named`` and every live session whose log reads from one of them (the model's own view)."""
        taken = set(named)
        grew = True
        while grew:
            found = {sid for sid, source in self.sources.items() if source in taken and self._inherits(sid)}
            grew = not found <= taken
            taken |= found
        return taken & set(self.expected)

    def _inherits(self, sid: SessionId) -> bool:
        if sid not in self.expected:
            return False
        return self.run(self.store.get_session(sid)).inherited > 0

    @invariant()
    def every_survivor_reads_its_log(self) -> None:
        for sid, log in self.expected.items():
            assert self._logged(self.run(self.store.read_events(sid))) == log, sid

    @invariant()
    def nothing_of_the_erased_is_readable(self) -> None:
        for sid in self.erased:
            try:
                self.run(self.store.get_session(sid))
            except NotFoundError:
                continue
            raise AssertionError(f"{sid} is still readable")
        assert {t.id for t in self.run(self.store.list_tombstones())} == self.erased


class SqliteEraseMachine(EraseMachine):
    backend = "sqlite"


_SETTINGS = settings(max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck))

TestEraseOnMemory = EraseMachine.TestCase
TestEraseOnMemory.settings = _SETTINGS
TestEraseOnSqlite = SqliteEraseMachine.TestCase
TestEraseOnSqlite.settings = _SETTINGS
