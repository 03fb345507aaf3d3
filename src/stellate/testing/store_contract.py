"""The store contract: rules every backend must keep, as plain pytest tests.

Use it for your own backend::

    # tests/test_my_store.py
    from stellate.testing.digest_contract import *  # noqa: F403  (digest listings, same fixtures)
    from stellate.testing.store_contract import *  # noqa: F403

    @pytest.fixture
    async def store():  # yields an open, empty store
        ...

    @pytest.fixture
    def reopen():  # async (store) -> store: close and open the same database again
        ...
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from stellate.errors import (
    ConflictError,
    ForkError,
    FormatError,
    InvariantError,
    NotFoundError,
    SessionBusyError,
    UsageError,
)
from stellate.log import NewEvent, check_log, derive_transcript, make_event
from stellate.store import (
    Anchor,
    BaseStore,
    Boundary,
    CompletedTurn,
    ForkRequest,
    SessionId,
    export_session,
    import_session,
)

S = SessionId


def turn(n: int, user: str = "hi", reply: str = "ok") -> list[NewEvent]:
    """A completed turn without tools."""
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": user}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": reply, "tool_calls": []}),
        make_event("step/end", {"turn": n, "step": 1}),
        make_event("turn/end", {"turn": n, "reason": "completed"}),
    ]


def open_tool_turn(n: int) -> list[NewEvent]:
    """A turn left open mid-step: two tool calls requested, the first started, none answered."""
    calls = [{"id": "c1", "name": "search", "arguments": "{}"}, {"id": "c2", "name": "fetch", "arguments": "{}"}]
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": "look it up"}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": "", "tool_calls": calls}),
        make_event("tool/call", {"call_id": "c1", "name": "search", "arguments": "{}"}),
    ]


async def _with_turns(store: BaseStore, sid: str, turns: int) -> None:
    await store.create_session(session_id=S(sid), events=[make_event("session/created", {"label": sid})])
    for n in range(1, turns + 1):
        await store.append(S(sid), turn(n, user=f"u{n}", reply=f"a{n}"))


# -- creation and reading ----------------------------------------------------------------------


async def test_created_session_reads_back_its_first_events(store: BaseStore) -> None:
    """A session created with events holds them at seqs 0..n-1 and its label is materialized."""
    record = await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "Trip"})])
    assert (record.id, record.label, record.next_seq) == ("a", "Trip", 1)
    events = await store.read_events(S("a"))
    assert [(e.seq, e.type) for e in events] == [(0, "session/created")]
    assert (await store.get_session(S("a"))).label == "Trip"


async def test_unknown_session_is_not_found(store: BaseStore) -> None:
    """Reading or appending to an unknown id raises NotFoundError."""
    with pytest.raises(NotFoundError):
        await store.get_session(S("nope"))
    with pytest.raises(NotFoundError):
        await store.append(S("nope"), turn(1))
    with pytest.raises(NotFoundError):
        await store.read_events(S("nope"))


async def test_duplicate_session_id_is_refused(store: BaseStore) -> None:
    """Creating a session with a taken id raises ConflictError(session_exists) and keeps the first."""
    await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "one"})])
    with pytest.raises(ConflictError) as info:
        await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "two"})])
    assert info.value.code == "session_exists"
    assert (await store.get_session(S("a"))).label == "one"


async def test_missing_topology_parent_is_refused(store: BaseStore) -> None:
    """A parent id that does not exist raises NotFoundError and creates nothing."""
    with pytest.raises(NotFoundError):
        await store.create_session(session_id=S("child"), parent_id=S("ghost"))
    with pytest.raises(NotFoundError):
        await store.get_session(S("child"))


async def test_append_numbers_events_contiguously(store: BaseStore) -> None:
    """Appended events get seqs continuing the log with no gap."""
    await _with_turns(store, "a", 2)
    events = await store.read_events(S("a"))
    assert [e.seq for e in events] == list(range(13))
    assert (await store.get_session(S("a"))).turn_count == 2


async def test_read_events_by_range_type_and_direction(store: BaseStore) -> None:
    """Range, type filter, reverse order and limit compose."""
    await _with_turns(store, "a", 3)
    assert [e.seq for e in await store.read_events(S("a"), start=2, stop=5)] == [2, 3, 4]
    ends = await store.read_events(S("a"), types=["turn/end"])
    assert [e.data["turn"] for e in ends] == [1, 2, 3]
    last = await store.read_events(S("a"), types=["user/message"], reverse=True, limit=1)
    assert [e.data["content"] for e in last] == ["u3"]
    assert await store.read_events(S("a"), limit=0) == []


async def test_event_data_round_trips_exactly(store: BaseStore) -> None:
    """Unicode, nesting, floats and big integers come back equal."""
    data: dict[str, Any] = {"content": "héllo 🌟 \u2028", "n": [1, 2.5, -3, 2**53 + 1], "deep": {"x": None, "t": True}}
    await store.create_session(session_id=S("a"), events=[NewEvent(type="app/note", data=data, ignorable=True)])
    [event] = await store.read_events(S("a"))
    assert event.data == data and event.ignorable


# -- refused writes change nothing ---------------------------------------------------------------


async def test_stale_expected_seq_is_a_conflict(store: BaseStore) -> None:
    """An append whose expected seq is not the head raises ConflictError(seq_conflict) and writes nothing."""
    await _with_turns(store, "a", 1)
    with pytest.raises(ConflictError) as info:
        await store.append(S("a"), turn(2), expected_seq=3)
    assert info.value.code == "seq_conflict"
    assert (await store.get_session(S("a"))).next_seq == 7
    await store.append(S("a"), turn(2), expected_seq=7)


async def test_batch_breaking_an_invariant_is_refused_whole(store: BaseStore) -> None:
    """A batch whose last event breaks a rule writes none of its events."""
    await _with_turns(store, "a", 1)
    bad = [*turn(2)[:-1], make_event("turn/end", {"turn": 7, "reason": "completed"})]
    with pytest.raises(InvariantError):
        await store.append(S("a"), bad)
    assert (await store.get_session(S("a"))).next_seq == 7
    assert len(await store.read_events(S("a"))) == 7


@pytest.mark.parametrize(
    "event",
    [
        NewEvent(type="made/up", data={}),
        NewEvent(type="user/message", data={"content": 3}),
        NewEvent(type="user/message", data={"content": "x", "bad": float("nan")}),
        NewEvent(type="user/message", data={"content": "x", "t": (1, 2)}),
    ],
    ids=["unknown-type", "wrong-field-type", "nan", "tuple"],
)
async def test_bad_event_is_refused_with_a_format_error(store: BaseStore, event: NewEvent) -> None:
    """Unknown types (not ignorable), schema mismatches and non-JSON data raise FormatError."""
    await _with_turns(store, "a", 1)
    with pytest.raises(FormatError):
        await store.append(S("a"), [event])
    assert (await store.get_session(S("a"))).next_seq == 7


async def test_turn_rules_are_enforced(store: BaseStore) -> None:
    """Nested turns, steps outside turns and unanswered tool calls are refused."""
    await _with_turns(store, "a", 1)
    with pytest.raises(InvariantError):
        await store.append(S("a"), [make_event("step/start", {"turn": 2, "step": 1})])
    await store.append(S("a"), open_tool_turn(2))
    with pytest.raises(InvariantError):
        await store.append(S("a"), [make_event("turn/start", {"turn": 3})])
    with pytest.raises(InvariantError):
        await store.append(S("a"), [make_event("step/end", {"turn": 2, "step": 1})])


# -- materialized state --------------------------------------------------------------------------


async def test_slots_are_materialized_in_the_same_write(store: BaseStore) -> None:
    """Label, prompt, memory, insight, config and status follow their events (replace semantics)."""
    await _with_turns(store, "a", 1)
    await store.append(
        S("a"),
        [
            make_event("label/set", {"label": "Budget"}),
            make_event("system_prompt/set", {"content": "be brief"}),
            make_event("memory/put", {"content": "m1"}),
            make_event("memory/put", {"content": "m2"}),
            make_event("insight/put", {"content": "i1"}),
            make_event("config/frozen", {"config": {"skills": ["x"]}}),
        ],
    )
    record = await store.get_session(S("a"))
    slots = record.slots
    assert (slots.label, slots.system_prompt, slots.memory, slots.insight) == ("Budget", "be brief", "m2", "i1")
    assert slots.config == {"skills": ["x"]} and record.status == "active"
    await store.append(S("a"), [make_event("insight/consumed"), make_event("session/archived")])
    record = await store.get_session(S("a"))
    assert record.slots.insight is None and record.status == "archived"
    assert record.slots.last_activity >= record.created_at - 1


# -- fork by reference ---------------------------------------------------------------------------


async def test_fork_reads_the_source_prefix_then_its_own_events(store: BaseStore) -> None:
    """A child's log is the source's events 0..boundary followed by its own, seq contiguous."""
    await _with_turns(store, "src", 2)
    child = await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6)))
    assert (child.inherited, child.fork_seq, child.source_id, child.next_seq) == (7, 6, "src", 7)
    await store.append(S("kid"), turn(2, user="child turn"))
    source_events = await store.read_events(S("src"))
    child_events = await store.read_events(S("kid"))
    assert child_events[:7] == source_events[:7]
    assert [e.seq for e in child_events] == list(range(13))
    assert child_events[8].data["content"] == "child turn"
    assert (await store.get_session(S("src"))).next_seq == 13


async def test_fork_does_not_inherit_slots(store: BaseStore) -> None:
    """Memory, insight, prompt and label set on the source stay there."""
    await _with_turns(store, "src", 1)
    await store.append(
        S("src"), [make_event("memory/put", {"content": "m"}), make_event("insight/put", {"content": "i"})]
    )
    child = await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=8)))
    assert (child.slots.memory, child.slots.insight, child.slots.label) == (None, None, "")
    assert child.turn_count == 1


async def test_source_appends_after_the_fork_are_invisible_to_the_child(store: BaseStore) -> None:
    """The child references a fixed prefix; the source keeps growing independently."""
    await _with_turns(store, "src", 1)
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6)))
    await store.append(S("src"), turn(2, user="later"))
    contents = [e.data.get("content") for e in await store.read_events(S("kid"))]
    assert "later" not in contents and len(contents) == 7


async def test_chain_of_forks_resolves_recursively(store: BaseStore) -> None:
    """A fork of a fork reads grand-source, source and own events, in order."""
    await _with_turns(store, "g", 1)
    await store.create_session(session_id=S("p"), fork=ForkRequest(source_id=S("g"), point=Boundary(seq=6)))
    await store.append(S("p"), turn(2, user="p2"))
    await store.create_session(session_id=S("c"), fork=ForkRequest(source_id=S("p"), point=Boundary(seq=12)))
    await store.append(S("c"), turn(3, user="c3"))
    events = await store.read_events(S("c"))
    assert [e.seq for e in events] == list(range(19))
    users = [e.data["content"] for e in events if e.type == "user/message"]
    assert users == ["u1", "p2", "c3"]
    tail = await store.read_events(S("c"), types=["user/message"], reverse=True, limit=2)
    assert [e.data["content"] for e in tail] == ["c3", "p2"]
    check_log(events)


async def test_fork_of_empty_prefix_starts_fresh(store: BaseStore) -> None:
    """A fork with no completed turn in the source inherits nothing."""
    await store.create_session(session_id=S("src"))
    await store.append(S("src"), open_tool_turn(1))
    child = await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=CompletedTurn()))
    assert (child.inherited, child.next_seq, child.source_id) == (0, 0, "src")
    await store.append(S("kid"), turn(1))


async def test_fork_errors_have_stable_codes_and_create_nothing(store: BaseStore) -> None:
    """source_not_found, child_exists (checked before the boundary), invalid_boundary, open_turn."""
    await _with_turns(store, "src", 1)
    await store.append(S("src"), open_tool_turn(2))
    cases: list[tuple[ForkRequest, str, str]] = [
        (ForkRequest(source_id=S("ghost"), point=Boundary(seq=0)), "new", "source_not_found"),
        (ForkRequest(source_id=S("src"), point=Boundary(seq=999)), "src", "child_exists"),
        (ForkRequest(source_id=S("src"), point=Boundary(seq=-1)), "new", "invalid_boundary"),
        (ForkRequest(source_id=S("src"), point=Boundary(seq=12)), "new", "invalid_boundary"),
    ]
    cases += [(ForkRequest(source_id=S("src"), point=Boundary(seq=s)), "new", "open_turn") for s in range(7, 12)]
    for request, child_id, code in cases:
        with pytest.raises(ForkError) as info:
            await store.create_session(session_id=S(child_id), fork=request)
        assert info.value.code == code, (request, info.value)
    with pytest.raises(NotFoundError):
        await store.get_session(S("new"))


async def test_anchor_forks_at_the_end_of_the_anchored_turn(store: BaseStore) -> None:
    """An anchor inside a finished turn forks at its turn/end; outside any turn, at the anchor itself."""
    await _with_turns(store, "src", 2)
    for at_seq, expected in [(3, 6), (6, 6), (0, 0), (8, 12), (None, 12), (500, 12)]:
        child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=at_seq)))
        assert child.fork_seq == expected, at_seq


async def test_anchor_inside_an_open_turn_is_unavailable(store: BaseStore) -> None:
    """Clicking a message of a turn still running gives fork_unavailable, never an earlier turn."""
    await _with_turns(store, "src", 1)
    await store.append(S("src"), open_tool_turn(2))
    with pytest.raises(ForkError) as info:
        await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=8)))
    assert info.value.code == "fork_unavailable"


async def test_completed_turn_clips_an_open_turn(store: BaseStore) -> None:
    """A fork from inside the source's open turn inherits up to its last completed turn."""
    await _with_turns(store, "src", 1)
    await store.append(S("src"), open_tool_turn(2))
    child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=CompletedTurn()))
    assert child.fork_seq == 6
    transcript = derive_transcript(await store.read_events(child.id))
    assert [m.role for m in transcript.messages] == ["user", "assistant"]


# -- repair --------------------------------------------------------------------------------------


async def test_repair_closes_an_open_turn_idempotently(store: BaseStore) -> None:
    """Unanswered calls get synthetic results (outcome unknown / not started), then step and turn close."""
    await _with_turns(store, "a", 1)
    await store.append(S("a"), open_tool_turn(2))
    added = await store.repair(S("a"))
    assert [e.type for e in added] == ["tool/result", "tool/result", "step/end", "turn/end"]
    assert [e.data["interrupted"] for e in added[:2]] == ["outcome_unknown", "not_started"]
    assert added[-1].data["reason"] == "interrupted"
    assert await store.repair(S("a")) == []
    events = await store.read_events(S("a"))
    check_log(events)
    roles = [m.role for m in derive_transcript(events).messages]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "tool"]


# -- topology ------------------------------------------------------------------------------------


async def test_topology_roots_children_ancestors_subtree(store: BaseStore) -> None:
    """The forest is read through parent links, in creation order."""
    await store.create_session(session_id=S("r1"))
    await store.create_session(session_id=S("r2"))
    await store.create_session(session_id=S("a"), parent_id=S("r1"))
    await store.create_session(session_id=S("b"), parent_id=S("r1"))
    await store.create_session(session_id=S("a1"), parent_id=S("a"))
    assert [r.id for r in await store.list_sessions(roots=True)] == ["r1", "r2"]
    assert [r.id for r in await store.list_sessions(parent_id=S("r1"))] == ["a", "b"]
    assert [r.id for r in await store.ancestors(S("a1"))] == ["a", "r1"]
    assert [r.id for r in await store.subtree(S("r1"))] == ["r1", "a", "b", "a1"]
    assert len(await store.list_sessions()) == 5


async def test_append_batches_is_atomic_across_sessions(store: BaseStore) -> None:
    """Batches for several sessions land together; one bad batch writes nothing anywhere."""
    await _with_turns(store, "a", 1)
    await _with_turns(store, "b", 1)
    written = await store.append_batches(
        {
            S("a"): [make_event("insight/put", {"content": "for a"})],
            S("b"): [make_event("insight/put", {"content": "for b"})],
        }
    )
    assert [e.seq for e in written[S("a")]] == [7] and [e.seq for e in written[S("b")]] == [7]
    assert (await store.get_session(S("b"))).slots.insight == "for b"
    with pytest.raises(InvariantError):
        await store.append_batches(
            {
                S("a"): [make_event("memory/put", {"content": "x"})],
                S("b"): [make_event("turn/end", {"turn": 9, "reason": "completed"})],
            }
        )
    with pytest.raises(NotFoundError):
        await store.append_batches(
            {
                S("a"): [make_event("memory/put", {"content": "x"})],
                S("ghost"): [make_event("memory/put", {"content": "y"})],
            }
        )
    assert (await store.get_session(S("a"))).next_seq == 8 and (await store.get_session(S("b"))).next_seq == 8


# -- concurrency and durability ------------------------------------------------------------------


async def test_concurrent_appends_lose_nothing(store: BaseStore) -> None:
    """Many tasks appending to one session: every event lands once, seqs contiguous."""
    await store.create_session(session_id=S("a"))

    async def writer(n: int) -> None:
        for i in range(10):
            await store.append(S("a"), [make_event("memory/put", {"content": f"{n}-{i}"})])

    await asyncio.gather(*(writer(n) for n in range(8)))
    events = await store.read_events(S("a"))
    assert [e.seq for e in events] == list(range(80))
    assert sorted(e.data["content"] for e in events) == sorted(f"{n}-{i}" for n in range(8) for i in range(10))


async def test_reopened_store_keeps_everything(store: BaseStore, reopen: Any) -> None:
    """After close and reopen, logs, forks and materialized state are as they were."""
    await _with_turns(store, "src", 2)
    await store.append(S("src"), [make_event("memory/put", {"content": "kept"})])
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6)))
    before = (await store.read_events(S("kid")), await store.get_session(S("src")))
    store = await reopen(store)
    after = (await store.read_events(S("kid")), await store.get_session(S("src")))
    assert after == before
    await store.append(S("kid"), turn(2), expected_seq=7)


# -- JSONL ---------------------------------------------------------------------------------------


async def test_jsonl_round_trip_is_lossless(store: BaseStore) -> None:
    """Export then import gives the same events and lineage; exporting again gives the same bytes."""
    await _with_turns(store, "src", 2)
    await store.create_session(
        session_id=S("kid"), parent_id=S("src"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6))
    )
    await store.append(S("kid"), [*turn(2, user="ü"), NewEvent(type="app/x", data={"f": 1.5}, ignorable=True)])
    first = io.StringIO()
    assert await export_session(store, S("kid"), first) == 14
    first.seek(0)
    copy = await import_session(store, first, session_id=S("copy"))
    assert (copy.parent_id, copy.source_id, copy.fork_seq, copy.inherited) == ("src", "src", 6, 0)
    assert await store.read_events(S("copy")) == await store.read_events(S("kid"))
    second = io.StringIO()
    await export_session(store, S("copy"), second)
    assert second.getvalue().splitlines()[1:] == first.getvalue().splitlines()[1:]


@pytest.mark.parametrize(
    ("mutate", "line"),
    [
        (lambda lines: lines[:4], 5),  # truncated: fewer events than the header promises
        (lambda lines: [*lines[:3], lines[3][:-5]], 4),  # cut inside a line
        (lambda lines: [*lines[:2], lines[3], lines[2], *lines[4:]], 3),  # out of order
        (lambda lines: [*lines[:2], "{not json\n", *lines[3:]], 3),
        (lambda lines: [lines[0], lines[1].replace("session/created", "no/such"), *lines[2:]], 2),
        (lambda lines: ["{}\n", *lines[1:]], 1),
    ],
    ids=["truncated", "cut-line", "out-of-order", "not-json", "unknown-type", "no-header"],
)
async def test_jsonl_import_names_the_first_bad_line(store: BaseStore, mutate: Any, line: int) -> None:
    """A corrupt, truncated or reordered file raises FormatError with its line number; nothing is written."""
    await _with_turns(store, "src", 1)
    out = io.StringIO()
    await export_session(store, S("src"), out)
    lines = out.getvalue().splitlines(keepends=True)
    with pytest.raises(FormatError) as info:
        await import_session(store, io.StringIO("".join(mutate(lines))), session_id=S("copy"))
    assert info.value.details["line"] == line, info.value
    with pytest.raises(NotFoundError):
        await store.get_session(S("copy"))


# -- leases: one writer per session ---------------------------------------------------------------


class _Clock:
    """A settable epoch-ms clock for a store, so lease expiry needs no sleeping."""

    def __init__(self, store: BaseStore) -> None:
        self.now = 1_000_000_000_000
        store.clock = lambda: self.now


async def test_lease_is_granted_shown_on_the_record_and_released(store: BaseStore) -> None:
    """A free session grants its lease; the record shows owner and expiry; release clears it."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    lease, record = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    assert (lease.owner, lease.acquired_at, lease.expires_at) == ("writer-1", clock.now, clock.now + 5000)
    assert record.lease == lease and record.next_seq == 7
    assert (await store.get_session(S("a"))).lease == lease
    await store.release_lease(S("a"), lease)
    assert (await store.get_session(S("a"))).lease is None


async def test_a_live_lease_keeps_other_writers_out(store: BaseStore) -> None:
    """A second writer gets session_busy naming the holder and the expiry; nothing changes."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(SessionBusyError) as info:
        await store.acquire_lease(S("a"), owner="writer-2", ttl=5)
    assert info.value.code == "session_busy"
    assert info.value.details["holder"] == "writer-1"
    assert info.value.details["expires_at"] == lease.expires_at
    assert (await store.get_session(S("a"))).lease == lease


async def test_a_new_grant_has_a_new_token_even_for_the_same_owner(store: BaseStore) -> None:
    """Leases are told apart by token, not owner: the same owner cannot take a session it already holds."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    await store.acquire_lease(S("a"), owner="same", ttl=5)
    with pytest.raises(SessionBusyError):
        await store.acquire_lease(S("a"), owner="same", ttl=5)


async def test_a_lapsed_lease_can_be_taken_over(store: BaseStore) -> None:
    """After its expiry a lease is dead: another writer takes the session."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    old, _ = await store.acquire_lease(S("a"), owner="crashed", ttl=5)
    clock.now += 5000
    new, _ = await store.acquire_lease(S("a"), owner="next", ttl=5)
    assert new.token != old.token
    assert (await store.get_session(S("a"))).lease == new


async def test_renewal_extends_a_held_lease(store: BaseStore) -> None:
    """Renewing moves the expiry to ttl from now; the lease then outlives its first expiry."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    clock.now += 4000
    renewed = await store.renew_lease(S("a"), lease, ttl=5)
    assert renewed.expires_at == clock.now + 5000 and renewed.token == lease.token
    clock.now += 3000  # past the first expiry, inside the renewed one
    with pytest.raises(SessionBusyError):
        await store.acquire_lease(S("a"), owner="writer-2", ttl=5)


async def test_a_holder_whose_lease_was_taken_is_fenced_out(store: BaseStore) -> None:
    """Once taken over, the old holder can neither append, renew nor release the new holder's lease."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    old, _ = await store.acquire_lease(S("a"), owner="paused", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=old)
    clock.now += 6000
    new, _ = await store.acquire_lease(S("a"), owner="next", ttl=5)
    head = (await store.get_session(S("a"))).next_seq
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2)[2:4], lease=old)
    assert info.value.code == "lease_lost" and info.value.details["holder"] == "next"
    with pytest.raises(SessionBusyError):
        await store.renew_lease(S("a"), old, ttl=5)
    await store.release_lease(S("a"), old)
    record = await store.get_session(S("a"))
    assert record.next_seq == head and record.lease == new


async def test_a_lapsed_lease_nobody_took_still_lets_its_holder_write(store: BaseStore) -> None:
    """Expiry alone does not fence: the token is checked, so a slow holder nobody replaced goes on."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="slow", ttl=5)
    clock.now += 60_000
    written = await store.append(S("a"), turn(2), lease=lease)
    assert written[-1].type == "turn/end"


async def test_without_the_lease_only_free_standing_slot_events_land(store: BaseStore) -> None:
    """While a lease is live, others may put memory or an insight, but not open or write a turn."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2))
    assert info.value.code == "session_busy"
    with pytest.raises(SessionBusyError):
        await store.append_batches({S("a"): [make_event("session/archived")]})
    await store.append(S("a"), [make_event("memory/put", {"content": "m"})])
    await store.append_batches({S("a"): [make_event("insight/put", {"content": "i"})]})
    record = await store.get_session(S("a"))
    assert (record.slots.memory, record.slots.insight, record.next_seq) == ("m", "i", 9)


async def test_anyone_may_write_when_no_lease_is_live(store: BaseStore) -> None:
    """With no lease, or only a lapsed one, an append without a lease is accepted as before."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    await store.append(S("a"), turn(2))
    await store.acquire_lease(S("a"), owner="gone", ttl=5)
    clock.now += 5000
    assert (await store.append(S("a"), turn(3)))[-1].seq == 18


async def test_a_released_lease_cannot_write(store: BaseStore) -> None:
    """A token is good for one grant: after release it is refused (lease_lost)."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    await store.release_lease(S("a"), lease)
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2), lease=lease)
    assert info.value.code == "lease_lost"


async def test_a_last_write_can_release_the_lease_in_its_own_transaction(store: BaseStore) -> None:
    """``release_lease`` writes the batch and frees the session at once; the token is then spent."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=lease)
    written = await store.append(S("a"), turn(2)[2:], lease=lease, release_lease=True)
    record = await store.get_session(S("a"))
    assert written[-1].type == "turn/end" and record.next_seq == 13 and record.lease is None
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), [make_event("memory/put", {"content": "m"})], lease=lease)
    assert info.value.code == "lease_lost"
    second, _ = await store.acquire_lease(S("a"), owner="writer-2", ttl=5)
    assert (await store.get_session(S("a"))).lease == second


async def test_a_refused_releasing_write_keeps_the_lease(store: BaseStore) -> None:
    """A batch refused (stale head, bad event) releases nothing; a release needs a lease to name."""
    _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(ConflictError):
        await store.append(S("a"), turn(2), expected_seq=3, lease=lease, release_lease=True)
    with pytest.raises(InvariantError):
        await store.append(S("a"), turn(2)[1:], lease=lease, release_lease=True)
    assert (await store.get_session(S("a"))).lease == lease
    with pytest.raises(UsageError):
        await store.append(S("a"), turn(2), release_lease=True)
    assert (await store.get_session(S("a"))).next_seq == 7


async def test_a_waiting_writer_gets_the_lease_when_it_is_released(store: BaseStore) -> None:
    """With ``wait``, a second writer queues behind the holder instead of failing."""
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=30)

    async def release_soon() -> None:
        await asyncio.sleep(0.05)
        await store.release_lease(S("a"), lease)

    releaser = asyncio.create_task(release_soon())
    second, _ = await store.acquire_lease(S("a"), owner="writer-2", ttl=30, wait=10)
    await releaser
    assert (await store.get_session(S("a"))).lease == second


async def test_lease_arguments_and_unknown_sessions_are_refused(store: BaseStore) -> None:
    """A non-positive ttl or a negative wait is a usage error; an unknown session is not found."""
    await _with_turns(store, "a", 1)
    with pytest.raises(UsageError):
        await store.acquire_lease(S("a"), owner="w", ttl=0)
    with pytest.raises(UsageError):
        await store.acquire_lease(S("a"), owner="w", wait=-1)
    with pytest.raises(NotFoundError):
        await store.acquire_lease(S("nope"), owner="w")


async def test_repair_leaves_a_live_writers_turn_alone(store: BaseStore) -> None:
    """Repair refuses a turn whose writer still holds the lease, and closes it once the lease lapsed."""
    clock = _Clock(store)
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="live", ttl=5)
    await store.append(S("a"), open_tool_turn(2), lease=lease)
    with pytest.raises(SessionBusyError):
        await store.repair(S("a"))
    assert (await store.get_session(S("a"))).cursor.turn_open
    clock.now += 5000
    closers = await store.repair(S("a"))
    assert closers[-1].data["reason"] == "interrupted"
    record = await store.get_session(S("a"))
    assert not record.cursor.turn_open and record.lease is None


async def test_lease_survives_reopen(store: BaseStore, reopen: Any) -> None:
    """The lease is stored with the session: a reopened store still keeps other writers out."""
    await _with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=30)
    store = await reopen(store)
    assert (await store.get_session(S("a"))).lease == lease
    with pytest.raises(SessionBusyError):
        await store.append(S("a"), turn(2))


# -- claims: background work done once ------------------------------------------------------------


async def test_a_claim_is_exclusive_until_released_or_lapsed(store: BaseStore) -> None:
    """One claim per key at a time; another key is independent; release or expiry frees the key."""
    clock = _Clock(store)
    first = await store.claim("consolidate:a", owner="w1", ttl=5)
    assert first is not None and first.expires_at == clock.now + 5000
    assert await store.claim("consolidate:a", owner="w2", ttl=5) is None
    assert await store.claim("consolidate:b", owner="w2", ttl=5) is not None
    await store.release_claim(first)
    second = await store.claim("consolidate:a", owner="w2", ttl=5)
    assert second is not None
    clock.now += 5000
    third = await store.claim("consolidate:a", owner="w3", ttl=5)
    assert third is not None
    await store.release_claim(second)  # a lapsed claim's release leaves its successor alone
    assert await store.claim("consolidate:a", owner="w4", ttl=5) is None


async def test_claim_arguments_are_checked(store: BaseStore) -> None:
    """An empty key or a non-positive ttl is a usage error."""
    with pytest.raises(UsageError):
        await store.claim("", owner="w", ttl=5)
    with pytest.raises(UsageError):
        await store.claim("k", owner="w", ttl=0)


# -- spaces --------------------------------------------------------------------------------------


async def test_a_space_sees_none_of_another_spaces_sessions(store: BaseStore) -> None:
    """A handle scoped to a space cannot read, list, append to, fork from or hang a child under another's session."""
    alpha, beta = store.in_space("alpha"), store.in_space("beta")
    await _with_turns(alpha, "a1", 1)
    await _with_turns(beta, "b1", 1)
    assert [r.id for r in await alpha.list_sessions()] == ["a1"]
    assert [r.id for r in await beta.list_sessions(roots=True)] == ["b1"]
    assert await store.list_sessions() == []  # the unscoped handle is the default space
    with pytest.raises(NotFoundError):
        await beta.get_session(S("a1"))
    with pytest.raises(NotFoundError):
        await beta.read_events(S("a1"))
    with pytest.raises(NotFoundError):
        await beta.append(S("a1"), turn(2))
    with pytest.raises(NotFoundError):
        await beta.append_batches({S("b1"): turn(2), S("a1"): turn(2)})
    with pytest.raises(ForkError) as info:
        await beta.create_session(session_id=S("b2"), fork=ForkRequest(source_id=S("a1")))
    assert info.value.code == "source_not_found"
    with pytest.raises(NotFoundError):
        await beta.create_session(session_id=S("b3"), parent_id=S("a1"))
    assert (await alpha.get_session(S("a1"))).next_seq == 7  # the refused append wrote nothing
    assert [r.id for r in await beta.list_sessions()] == ["b1"]


async def test_an_id_taken_in_another_space_is_refused_without_its_data(store: BaseStore) -> None:
    """Session ids are unique across spaces: a taken id is refused with ``session_exists`` and nothing else."""
    await _with_turns(store.in_space("alpha"), "same", 1)
    with pytest.raises(ConflictError) as info:
        await store.in_space("beta").create_session(session_id=S("same"))
    assert info.value.code == "session_exists"
    assert await store.in_space("beta").list_sessions() == []


async def test_spaces_survive_a_reopen(store: BaseStore, reopen: Any) -> None:
    """A session stays in its space after the store is closed and opened again."""
    await _with_turns(store.in_space("alpha"), "a1", 2)
    fresh = await reopen(store)
    assert [r.id for r in await fresh.in_space("alpha").list_sessions()] == ["a1"]
    assert await fresh.list_sessions() == []
    assert len(await fresh.in_space("alpha").read_events(S("a1"))) == 13


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
