"""Stateful property tests: random append / pause / decide / fork / crash / repair sequences keep every log rule."""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from stellate.errors import ForkError, FormatError, InvariantError
from stellate.log import check_log, check_messages_pairing, derive_transcript, make_event, message_to_json
from stellate.log.usage import usage_totals
from stellate.store import BaseStore, Boundary, CompletedTurn, ForkRequest, SessionId
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore

T = TypeVar("T")

ANY_EVENT_TYPES = [
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "user/message",
    "assistant/message",
    "tool/result",
    "tool/call",
    "memory/put",
    "tool/approval_requested",
    "tool/approval_decided",
    "model/called",
]


class LogMachine(RuleBasedStateMachine):
    backend = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = tempfile.TemporaryDirectory()
        self.store: BaseStore = self.run(self._open())
        self.sessions: list[SessionId] = []
        self.calls = 0

    async def _open(self) -> BaseStore:
        if self.backend == "memory":
            return MemoryStore()
        return await SqliteStore.open(str(Path(self.tmp.name) / "p.db"))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        self.tmp.cleanup()

    def cursor(self, sid: SessionId) -> Any:
        return self.run(self.store.get_session(sid)).cursor

    @initialize()
    def root(self) -> None:
        record = self.run(self.store.create_session(events=[make_event("session/created", {"label": "root"})]))
        self.sessions.append(record.id)

    # -- well-formed writes ----------------------------------------------------------------------

    @rule(data=st.data())
    def start_turn(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        if c.turn_open:
            return
        n = c.last_turn + 1
        self.run(
            self.store.append(
                sid, [make_event("turn/start", {"turn": n}), make_event("user/message", {"content": f"u{n}"})]
            )
        )

    @rule(
        data=st.data(),
        n_calls=st.integers(0, 3),
        text=st.sampled_from(["", "reply"]),
        tokens=st.one_of(st.none(), st.integers(0, 9)),
    )
    def model_step(self, data: st.DataObject, n_calls: int, text: str, tokens: int | None) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        if not c.turn_open or c.step_open:
            return
        calls = []
        for _ in range(n_calls):
            self.calls += 1
            calls.append({"id": f"c{self.calls}", "name": "tool", "arguments": "{}"})
        step = {"turn": c.last_turn, "step": c.step + 1}
        message = make_event("assistant/message", {"content": text, "tool_calls": calls})
        usage = {"provider": "p", "model": "m", "input_tokens": tokens, "output_tokens": tokens, "latency_ms": 1}
        called = make_event("model/called", {**step, **usage, "ttft_ms": None, "stop_reason": None}, ignorable=True)
        self.run(self.store.append(sid, [make_event("step/start", step), message, called]))

    @rule(data=st.data(), record_call=st.booleans())
    def run_tool(self, data: st.DataObject, record_call: bool) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        ready = [call for call in c.unanswered if call not in c.awaiting]
        if not ready:
            return
        call_id = ready[0]
        if record_call and call_id not in c.started:
            self.run(
                self.store.append(
                    sid, [make_event("tool/call", {"call_id": call_id, "name": "tool", "arguments": "{}"})]
                )
            )
            return
        result = {"call_id": call_id, "name": "tool", "content": "r", "is_error": False}
        self.run(self.store.append(sid, [make_event("tool/result", result)]))

    @rule(data=st.data(), reason=st.sampled_from(["completed", "aborted", "error", "max_rounds"]))
    def close_step_and_turn(self, data: st.DataObject, reason: str) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        events = []
        if c.step_open:
            if c.unanswered:
                return
            events.append(make_event("step/end", {"turn": c.last_turn, "step": c.step}))
        if c.turn_open:
            events.append(make_event("turn/end", {"turn": c.last_turn, "reason": reason}))
        if events:
            self.run(self.store.append(sid, events))

    @rule(
        data=st.data(),
        content=st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=5),
    )
    def slot_event(self, data: st.DataObject, content: str) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        self.run(self.store.append(sid, [make_event("memory/put", {"content": content})]))

    @rule(data=st.data())
    def pause_for_approval(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        free = [call for call in c.unanswered if call not in c.started and call not in c.awaiting]
        if not free:
            return
        asked = data.draw(st.lists(st.sampled_from(free), min_size=1, unique=True))
        base = {"turn": c.last_turn, "step": c.step, "name": "tool", "arguments": "{}"}
        requests = [{**base, "call_id": call, "deadline": None, "on_timeout": "deny"} for call in asked]
        self.run(self.store.append(sid, [make_event("tool/approval_requested", r) for r in requests]))
        assert self.cursor(sid).paused

    @rule(data=st.data(), approve=st.booleans())
    def decide_approval(self, data: st.DataObject, approve: bool) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        c = self.cursor(sid)
        if not c.awaiting:
            return
        call = data.draw(st.sampled_from(c.awaiting))
        decision = {"call_id": call, "decision": "approved" if approve else "denied", "by": "p"}
        self.run(self.store.append(sid, [make_event("tool/approval_decided", decision)]))
        assert call not in self.cursor(sid).awaiting

    # -- crash, repair, fork ---------------------------------------------------------------------

    @rule(data=st.data())
    def crash_and_repair(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        before = self.cursor(sid)
        added = self.run(self.store.repair(sid))
        assert bool(added) == (before.turn_open and not before.paused)  # a paused turn is not dead
        after = self.cursor(sid)
        assert after == before if before.paused else not after.turn_open
        assert self.run(self.store.repair(sid)) == []

    @precondition(lambda self: len(self.sessions) < 8)
    @rule(data=st.data())
    def fork_at_boundary(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        events = self.run(self.store.read_events(sid))
        boundary = data.draw(st.integers(-1, len(events)))
        markers = [e for e in events[: boundary + 1] if e.type in ("turn/start", "turn/end")] if boundary >= 0 else []
        expect_ok = 0 <= boundary < len(events) and (not markers or markers[-1].type == "turn/end")
        try:
            child = self.run(self.store.create_session(fork=ForkRequest(source_id=sid, point=Boundary(seq=boundary))))
        except ForkError as exc:
            assert not expect_ok, exc
            assert exc.code in ("invalid_boundary", "open_turn")
            return
        assert expect_ok
        self.sessions.append(child.id)
        assert self.run(self.store.read_events(child.id)) == events[: boundary + 1]

    @precondition(lambda self: len(self.sessions) < 8)
    @rule(data=st.data())
    def fork_from_inside_a_turn(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        child = self.run(self.store.create_session(fork=ForkRequest(source_id=sid, point=CompletedTurn())))
        self.sessions.append(child.id)
        assert not self.cursor(child.id).turn_open

    # -- hostile writes --------------------------------------------------------------------------

    @rule(data=st.data(), event_type=st.sampled_from(ANY_EVENT_TYPES), turn=st.integers(0, 4), step=st.integers(0, 3))
    def random_write_is_either_valid_or_refused_cleanly(
        self, data: st.DataObject, event_type: str, turn: int, step: int
    ) -> None:
        sid = data.draw(st.sampled_from(self.sessions))
        payload: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "reason": "completed",
            "content": "x",
            "tool_calls": [],
            "call_id": "c1",
            "name": "tool",
            "arguments": "{}",
            "is_error": False,
            "deadline": None,
            "on_timeout": "deny",
            "decision": "approved",
            "by": "p",
            "provider": "p",
            "model": "m",
            "input_tokens": None,
            "output_tokens": 1,
            "latency_ms": 1,
            "ttft_ms": None,
            "stop_reason": "stop",
        }
        before = self.run(self.store.get_session(sid))
        try:
            self.run(self.store.append(sid, [make_event(event_type, payload)]))
        except (InvariantError, FormatError):
            assert self.run(self.store.get_session(sid)) == before

    # -- what must always hold -------------------------------------------------------------------

    @invariant()
    def every_log_is_valid_and_derives_a_valid_transcript(self) -> None:
        for sid in self.sessions:
            record = self.run(self.store.get_session(sid))
            events = self.run(self.store.read_events(sid))
            assert [e.seq for e in events] == list(range(record.next_seq))
            # The cursor is the checker's state after the log, plus the lineage fact the log alone cannot hold:
            # how many of its turns a fork read from its source (the turns of its inherited prefix).
            assert check_log(events) == dataclasses.replace(record.cursor, inherited_turns=0)
            assert record.inherited_turns == check_log(events[: record.inherited]).last_turn
            messages = derive_transcript(events).messages
            check_messages_pairing([message_to_json(m) for m in messages])
            assert all(m.content or getattr(m, "tool_calls", ()) for m in messages if m.role == "assistant")
            calls = usage_totals(events)  # every recorded call is read back; unknown tokens stay unknown
            assert calls.calls == sum(e.type == "model/called" for e in events)

    @invariant()
    def a_paused_turn_waits_only_on_unstarted_unanswered_calls_of_its_open_step(self) -> None:
        for sid in self.sessions:
            c = self.cursor(sid)
            if c.paused:
                assert c.turn_open and c.step_open
                assert set(c.awaiting) <= set(c.unanswered) - set(c.started)

    @invariant()
    def every_child_prefix_equals_its_source(self) -> None:
        for sid in self.sessions:
            record = self.run(self.store.get_session(sid))
            if record.inherited and record.source_id:
                mine = self.run(self.store.read_events(sid, stop=record.inherited))
                theirs = self.run(self.store.read_events(record.source_id, stop=record.inherited))
                assert mine == theirs


class SqliteLogMachine(LogMachine):
    backend = "sqlite"


_settings = settings(max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck))
TestMemoryLog = LogMachine.TestCase
TestMemoryLog.settings = _settings
TestSqliteLog = SqliteLogMachine.TestCase
TestSqliteLog.settings = _settings
