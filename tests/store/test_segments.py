"""Stored fold segments on every backend: kept per session, replaced by range, read through fork chains."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from stellate.log import make_event
from stellate.store import BaseStore, Boundary, ForkRequest, SessionId
from stellate.store.segments import StoredSegment

Reopen = Callable[[BaseStore], Awaitable[BaseStore]]


def row(sid: SessionId, start: int, end: int, data: str) -> StoredSegment:
    return StoredSegment(session_id=sid, start=start, end=end, data=data)


async def new_session(store: BaseStore, events: int) -> SessionId:
    record = await store.create_session(events=[make_event("session/created", {"label": "s"})])
    if events > 1:
        await store.append(record.id, [make_event("label/set", {"label": f"l{i}"}) for i in range(events - 1)])
    return record.id


async def test_segments_survive_a_reopen_and_are_replaced_by_range(store: BaseStore, reopen: Reopen) -> None:
    sid = await new_session(store, 10)
    await store.write_fold_segments([row(sid, 0, 4, "first"), row(sid, 4, 8, "second")])
    await store.write_fold_segments([row(sid, 0, 4, "repaired")])
    store = await reopen(store)
    found = sorted((s.start, s.end, s.data) for s in await store.read_fold_segments(sid))
    assert found == [(0, 4, "repaired"), (4, 8, "second")]


async def test_a_fork_reads_its_source_segments_only_within_its_inherited_prefix(store: BaseStore) -> None:
    source = await new_session(store, 10)
    await store.write_fold_segments([row(source, 0, 4, "a"), row(source, 4, 8, "b"), row(source, 8, 10, "c")])
    child = await store.create_session(
        fork=ForkRequest(source_id=source, point=Boundary(seq=5)),
        events=[make_event("session/created", {"label": "child"})],
    )
    await store.write_fold_segments([row(child.id, 4, 7, "own")])
    found = sorted((s.session_id == child.id, s.start, s.end) for s in await store.read_fold_segments(child.id))
    assert found == [(False, 0, 4), (True, 4, 7)]
    assert await store.read_fold_segments(SessionId(source)) != []
