"""The erase rules of the store contract (`stellate.store.erasure`), over the same ``store`` fixture.

`stellate.testing.store_contract` re-exports these tests, so ``from stellate.testing.store_contract import *`` runs
them; import this module alone to run only them.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from stellate.errors import ConflictError, ForkError, HasDependentsError, NotFoundError, SessionBusyError
from stellate.log import make_event
from stellate.store import BaseStore, Boundary, ForkRequest
from stellate.store.history import EventHistory, NewHistoryEntry
from stellate.store.segments import StoredSegment
from stellate.store.types import SessionId
from stellate.testing.contract_support import S, turn, with_turns

__all__ = [
    "test_a_busy_session_is_refused_or_waited_for",
    "test_a_dry_run_names_what_the_erase_then_takes",
    "test_a_handle_that_cached_the_lineage_still_reads_a_kept_dependent",
    "test_cascade_erases_every_dependent_of_a_depth_three_tree",
    "test_erase_refuses_dependents_without_a_choice",
    "test_erase_removes_the_session_and_leaves_a_tombstone",
    "test_erase_removes_history_rows_and_fold_segments_of_the_session",
    "test_fold_segments_written_after_the_erase_are_not_kept",
    "test_erasing_a_middle_session_keeps_its_forks_whole",
    "test_keep_copies_the_inherited_prefix_into_each_dependent",
    "test_nothing_writes_to_an_erased_session",
    "test_unknown_session_erases_nothing",
]


async def _fork(store: BaseStore, child: str, source: str, seq: int, parent: str | None = None) -> None:
    request = ForkRequest(source_id=S(source), point=Boundary(seq=seq))
    await store.create_session(session_id=S(child), parent_id=S(parent or source), fork=request)


async def _tree(store: BaseStore) -> None:
    """``root`` (2 turns) -> ``child`` (forked at turn 1, 1 own turn) -> ``grand`` (forked at its head, 1 turn)."""
    await with_turns(store, "root", 2)
    await _fork(store, "child", "root", 6)
    await store.append(S("child"), turn(2, user="c2", reply="c2"))
    await _fork(store, "grand", "child", 12)
    await store.append(S("grand"), turn(3, user="g3", reply="g3"))


async def _logs(store: BaseStore, *ids: str) -> dict[str, list[tuple[int, str, str]]]:
    return {sid: [(e.seq, e.type, json.dumps(e.data)) for e in await store.read_events(S(sid))] for sid in ids}


async def test_erase_removes_the_session_and_leaves_a_tombstone(store: BaseStore) -> None:
    """An erased session is unknown to every read; a tombstone with its lineage, time and eraser remains."""
    await with_turns(store, "a", 1)
    await with_turns(store, "b", 1)
    plan = await store.erase_sessions([S("a")], by="key-1")
    assert plan.erased == ("a",) and plan.kept == ()
    with pytest.raises(NotFoundError):
        await store.get_session(S("a"))
    with pytest.raises(NotFoundError):
        await store.read_events(S("a"))
    assert [r.id for r in await store.list_sessions()] == ["b"]
    assert [d.id for d in await store.list_digests()] == ["b"]
    [stone] = await store.list_tombstones()
    assert (stone.id, stone.erased_by, stone.parent_id) == ("a", "key-1", None)
    assert stone.erased_at >= stone.created_at > 0


async def test_unknown_session_erases_nothing(store: BaseStore) -> None:
    """Naming an unknown id refuses the whole erase (NotFoundError); the known ones stay."""
    await with_turns(store, "a", 1)
    with pytest.raises(NotFoundError):
        await store.erase_sessions([S("a"), S("nope")])
    assert (await store.get_session(S("a"))).next_seq == 7
    assert await store.list_tombstones() == []


async def test_erase_refuses_dependents_without_a_choice(store: BaseStore) -> None:
    """Erasing a fork source with no choice raises HasDependentsError naming every dependent; nothing goes."""
    await _tree(store)
    with pytest.raises(HasDependentsError) as info:
        await store.erase_sessions([S("root")])
    assert info.value.code == "has_dependents"
    assert info.value.details["dependents"] == ["child", "grand"]
    assert len(await store.list_sessions()) == 3


async def test_cascade_erases_every_dependent_of_a_depth_three_tree(store: BaseStore) -> None:
    """``cascade`` erases the session and every session reading from it through forks, each tombstoned."""
    await _tree(store)
    await with_turns(store, "other", 1)
    plan = await store.erase_sessions([S("root")], dependents="cascade")
    assert plan.erased == ("root", "child", "grand")
    assert [r.id for r in await store.list_sessions()] == ["other"]
    assert sorted(t.id for t in await store.list_tombstones()) == ["child", "grand", "root"]


async def test_keep_copies_the_inherited_prefix_into_each_dependent(store: BaseStore, reopen: object) -> None:
    """``keep`` leaves every dependent reading exactly the log it read before, after a reopen too."""
    await _tree(store)
    before = await _logs(store, "child", "grand")
    plan = await store.erase_sessions([S("root")], dependents="keep")
    assert plan.erased == ("root",) and plan.kept == ("child",)
    assert await _logs(store, "child", "grand") == before
    child = await store.get_session(S("child"))
    assert (child.source_id, child.fork_seq, child.inherited) == ("root", 6, 0)
    assert callable(reopen)
    fresh = await reopen(store)
    assert await _logs(fresh, "child", "grand") == before
    await fresh.append(S("grand"), turn(4))
    assert (await fresh.get_session(S("grand"))).next_seq == before["grand"][-1][0] + 7


async def test_erasing_a_middle_session_keeps_its_forks_whole(store: BaseStore) -> None:
    """Erasing the middle of a fork chain (``keep``) leaves its source and its forks as they were."""
    await _tree(store)
    before = await _logs(store, "root", "grand")
    plan = await store.erase_sessions([S("child")], dependents="keep")
    assert plan.kept == ("grand",)
    assert await _logs(store, "root", "grand") == before
    grand = await store.get_session(S("grand"))
    assert grand.parent_id == "child"  # it hangs from the tombstone, which keeps the lineage readable
    assert [t.id for t in await store.list_tombstones()] == ["child"]


async def test_a_handle_that_cached_the_lineage_still_reads_a_kept_dependent(store: BaseStore) -> None:
    """A handle that read a dependent before another handle erased its source reads the whole copied log."""
    await _tree(store)
    other = store.in_space(store.space)
    before = await _logs(other, "child", "grand")
    await store.erase_sessions([S("root")], dependents="keep")
    assert await _logs(other, "child", "grand") == before
    assert len(await other.read_events(S("grand"), types=["user/message"])) == 3


async def test_nothing_writes_to_an_erased_session(store: BaseStore) -> None:
    """After an erase, appends get NotFoundError, forks source_not_found, and the id is never given again."""
    await with_turns(store, "a", 1)
    await store.erase_sessions([S("a")])
    with pytest.raises(NotFoundError):
        await store.append(S("a"), [make_event("memory/put", {"memory": "late"})])
    with pytest.raises(ForkError) as info:
        await store.create_session(fork=ForkRequest(source_id=S("a")))
    assert info.value.code == "source_not_found"
    with pytest.raises(NotFoundError):
        await store.create_session(parent_id=S("a"))
    with pytest.raises(ConflictError) as taken:
        await store.create_session(session_id=S("a"))
    assert taken.value.code == "session_exists"


async def test_a_busy_session_is_refused_or_waited_for(store: BaseStore) -> None:
    """A live lease makes the erase answer session_busy at once, or wait until the holder lets go."""
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer", ttl=30)
    with pytest.raises(SessionBusyError) as info:
        await store.erase_sessions([S("a")])
    assert info.value.code == "session_busy"
    assert (await store.get_session(S("a"))).next_seq == 7

    async def finish_turn() -> None:
        await asyncio.sleep(0.2)
        await store.append(S("a"), turn(2), lease=lease, release_lease=True)

    finisher = asyncio.create_task(finish_turn())
    plan = await store.erase_sessions([S("a")], wait=10)
    await finisher
    assert plan.erased == ("a",)


async def test_a_dry_run_names_what_the_erase_then_takes(store: BaseStore) -> None:
    """`plan_erase` changes nothing and names exactly what `erase_sessions` then erases and keeps."""
    await _tree(store)
    planned = await store.plan_erase([S("child")], dependents="cascade")
    assert (planned.erased, planned.kept) == (("child", "grand"), ())
    assert len(await store.list_sessions()) == 3 and await store.list_tombstones() == []
    done = await store.erase_sessions([S("child")], dependents="cascade")
    assert (done.erased, done.kept) == (planned.erased, planned.kept)


async def test_erase_removes_history_rows_and_fold_segments_of_the_session(store: BaseStore) -> None:
    """Event-history rows naming the session and its fold segments go with it; other sessions' rows stay."""
    await with_turns(store, "a", 1)
    await with_turns(store, "b", 1)
    assert isinstance(store, EventHistory)
    await store.append_history(
        [
            NewHistoryEntry(kind="note", data=json.dumps({"session_id": "a", "text": "secret"})),
            NewHistoryEntry(kind="note", data=json.dumps({"session_id": "b", "text": "kept"})),
        ]
    )
    segments = [StoredSegment(session_id=SessionId(sid), start=0, end=7, data="{}") for sid in ("a", "b")]
    await store.write_fold_segments(segments)
    await store.erase_sessions([S("a")])
    page = await store.read_history()
    assert [json.loads(e.data)["session_id"] for e in page.entries] == ["b"]
    assert [s.session_id for s in await store.read_fold_segments(S("b"))] == ["b"]


async def test_fold_segments_written_after_the_erase_are_not_kept(store: BaseStore) -> None:
    """A writer that still held the session open stores no fold segment for it once it is erased."""
    await with_turns(store, "a", 1)
    await store.erase_sessions([S("a")])
    await store.write_fold_segments([StoredSegment(session_id=SessionId("a"), start=0, end=7, data="late")])
    await with_turns(store, "b", 1)
    await store.write_fold_segments([StoredSegment(session_id=SessionId("b"), start=0, end=7, data="{}")])
    assert [s.session_id for s in await store.read_fold_segments(S("b"))] == ["b"]
    assert await store._read_segment_rows(SessionId("a"), None) == []
