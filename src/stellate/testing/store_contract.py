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

This module holds the log rules (creation, append, refused writes, materialized state, fork, repair, topology,
durability, JSONL) and re-exports the rest of the contract, so the one ``import *`` above runs all of it:
`stellate.testing.lease_contract` (leases and claims), `stellate.testing.space_contract` (spaces),
`stellate.testing.history_contract` (the event history), `stellate.testing.search_contract` (message search) and
`stellate.testing.blob_contract` (blobs). Their shared builders (`turn`, `open_tool_turn`, ...) live in
`stellate.testing.contract_support`.
"""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

from stellate.errors import ConflictError, ForkError, FormatError, InvariantError, NotFoundError
from stellate.log import NewEvent, check_log, derive_transcript, make_event
from stellate.store import (
    Anchor,
    BaseStore,
    Boundary,
    CompletedTurn,
    ForkRequest,
    export_session,
    import_session,
)
from stellate.testing.approval_contract import *  # noqa: F403
from stellate.testing.blob_contract import *  # noqa: F403
from stellate.testing.contract_support import S, with_turns

# `turn` and `open_tool_turn` were first defined here; backends' tests still import them from this module.
from stellate.testing.contract_support import open_tool_turn as open_tool_turn
from stellate.testing.contract_support import turn as turn

# The rest of the contract: `import *` of this module must keep handing a backend every rule.
from stellate.testing.erase_contract import *  # noqa: F403
from stellate.testing.history_contract import *  # noqa: F403
from stellate.testing.lease_contract import *  # noqa: F403
from stellate.testing.listing_contract import *  # noqa: F403
from stellate.testing.search_contract import *  # noqa: F403
from stellate.testing.space_contract import *  # noqa: F403

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
    await with_turns(store, "a", 2)
    events = await store.read_events(S("a"))
    assert [e.seq for e in events] == list(range(13))
    assert (await store.get_session(S("a"))).turn_count == 2


async def test_read_events_by_range_type_and_direction(store: BaseStore) -> None:
    """Range, type filter, reverse order and limit compose."""
    await with_turns(store, "a", 3)
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
    await with_turns(store, "a", 1)
    with pytest.raises(ConflictError) as info:
        await store.append(S("a"), turn(2), expected_seq=3)
    assert info.value.code == "seq_conflict"
    assert (await store.get_session(S("a"))).next_seq == 7
    await store.append(S("a"), turn(2), expected_seq=7)


async def test_batch_breaking_an_invariant_is_refused_whole(store: BaseStore) -> None:
    """A batch whose last event breaks a rule writes none of its events."""
    await with_turns(store, "a", 1)
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
    await with_turns(store, "a", 1)
    with pytest.raises(FormatError):
        await store.append(S("a"), [event])
    assert (await store.get_session(S("a"))).next_seq == 7


async def test_turn_rules_are_enforced(store: BaseStore) -> None:
    """Nested turns, steps outside turns and unanswered tool calls are refused."""
    await with_turns(store, "a", 1)
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
    await with_turns(store, "a", 1)
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
    await with_turns(store, "src", 2)
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
    await with_turns(store, "src", 1)
    await store.append(
        S("src"), [make_event("memory/put", {"content": "m"}), make_event("insight/put", {"content": "i"})]
    )
    child = await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=8)))
    assert (child.slots.memory, child.slots.insight, child.slots.label) == (None, None, "")
    assert child.turn_count == 1


async def test_source_appends_after_the_fork_are_invisible_to_the_child(store: BaseStore) -> None:
    """The child references a fixed prefix; the source keeps growing independently."""
    await with_turns(store, "src", 1)
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6)))
    await store.append(S("src"), turn(2, user="later"))
    contents = [e.data.get("content") for e in await store.read_events(S("kid"))]
    assert "later" not in contents and len(contents) == 7


async def test_chain_of_forks_resolves_recursively(store: BaseStore) -> None:
    """A fork of a fork reads grand-source, source and own events, in order."""
    await with_turns(store, "g", 1)
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
    await with_turns(store, "src", 1)
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
    """An anchor forks at the first turn/end at or after it (before the first turn too); past the end, last turn."""
    await with_turns(store, "src", 2)
    for at_seq, expected in [(3, 6), (6, 6), (0, 6), (8, 12), (None, 12), (500, 12)]:
        child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=at_seq)))
        assert child.fork_seq == expected, at_seq


async def test_anchor_between_turns_takes_the_turn_after_it(store: BaseStore) -> None:
    """A slot event between two turns anchors at the next turn's end; after the last turn, at the anchor."""
    await with_turns(store, "src", 1)
    await store.append(S("src"), [make_event("memory/put", {"content": "between"})])  # seq 7
    await store.append(S("src"), turn(2))  # seqs 8..13
    await store.append(S("src"), [make_event("memory/put", {"content": "after"})])  # seq 14
    for at_seq, expected in [(7, 13), (14, 14)]:
        child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=at_seq)))
        assert child.fork_seq == expected, at_seq
    await store.append(S("src"), open_tool_turn(3))  # a turn runs after the slot event at 14
    with pytest.raises(ForkError) as info:
        await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=14)))
    assert info.value.code == "fork_unavailable"


async def test_anchor_inside_an_open_turn_is_unavailable(store: BaseStore) -> None:
    """Clicking a message of a turn still running gives fork_unavailable, never an earlier turn."""
    await with_turns(store, "src", 1)
    await store.append(S("src"), open_tool_turn(2))
    with pytest.raises(ForkError) as info:
        await store.create_session(fork=ForkRequest(source_id=S("src"), point=Anchor(at_seq=8)))
    assert info.value.code == "fork_unavailable"


async def test_completed_turn_clips_an_open_turn(store: BaseStore) -> None:
    """A fork from inside the source's open turn inherits up to its last completed turn."""
    await with_turns(store, "src", 1)
    await store.append(S("src"), open_tool_turn(2))
    child = await store.create_session(fork=ForkRequest(source_id=S("src"), point=CompletedTurn()))
    assert child.fork_seq == 6
    transcript = derive_transcript(await store.read_events(child.id))
    assert [m.role for m in transcript.messages] == ["user", "assistant"]


# -- repair --------------------------------------------------------------------------------------


async def test_repair_closes_an_open_turn_idempotently(store: BaseStore) -> None:
    """Unanswered calls get synthetic results (outcome unknown / not started), then step and turn close."""
    await with_turns(store, "a", 1)
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
    await with_turns(store, "a", 1)
    await with_turns(store, "b", 1)
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
    await with_turns(store, "src", 2)
    await store.append(S("src"), [make_event("memory/put", {"content": "kept"})])
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6)))
    before = (await store.read_events(S("kid")), await store.get_session(S("src")))
    store = await reopen(store)
    after = (await store.read_events(S("kid")), await store.get_session(S("src")))
    assert after == before
    await store.append(S("kid"), turn(2), expected_seq=7)


async def test_a_fork_counts_its_inherited_turns_apart_from_its_own(store: BaseStore, reopen: Any) -> None:
    """A fork's record says how many of its turns came from the source, after its own turns and a reopen."""
    await with_turns(store, "src", 3)
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=12)))
    await store.append(S("kid"), turn(3))
    await store.create_session(session_id=S("grand"), fork=ForkRequest(source_id=S("kid"), point=Anchor()))
    store = await reopen(store)
    kid, grand, src = [await store.get_session(S(sid)) for sid in ("kid", "grand", "src")]
    assert (kid.turn_count, kid.inherited_turns, kid.own_turns) == (3, 2, 1)
    assert (grand.turn_count, grand.inherited_turns, grand.own_turns) == (3, 3, 0)
    assert (src.inherited_turns, src.own_turns) == (0, 3)


# -- JSONL ---------------------------------------------------------------------------------------


async def test_jsonl_round_trip_is_lossless(store: BaseStore) -> None:
    """Export then import gives the same events and lineage; exporting again gives the same bytes."""
    await with_turns(store, "src", 2)
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
    await with_turns(store, "src", 1)
    out = io.StringIO()
    await export_session(store, S("src"), out)
    lines = out.getvalue().splitlines(keepends=True)
    with pytest.raises(FormatError) as info:
        await import_session(store, io.StringIO("".join(mutate(lines))), session_id=S("copy"))
    assert info.value.details["line"] == line, info.value
    with pytest.raises(NotFoundError):
        await store.get_session(S("copy"))


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
