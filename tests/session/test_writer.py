"""The session's write path (`SessionWriter`): staging, commits under the lease, rebase and reload."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stellate.errors import ArchivedError, FormatError
from stellate.llm.scripted import ScriptedLLM
from stellate.log import check_log, make_event
from stellate.session import Session, SessionRuntime
from stellate.store import BaseStore
from stellate.store.sqlite import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[BaseStore]:
    s = await SqliteStore.open(str(tmp_path / "w.db"))
    yield s
    await s.close()


async def new_session(store: BaseStore) -> Session:
    return await Session.create(store, SessionRuntime(llm=ScriptedLLM(default="ok")), label="start")


async def test_staged_events_are_folded_at_once_and_stored_only_on_flush(store: BaseStore) -> None:
    session = await new_session(store)
    stored = (await store.get_session(session.id)).next_seq
    session.writer.stage([make_event("label/set", {"label": "renamed"})])
    assert session.label == "renamed" and session.writer.has_pending
    assert (await store.get_session(session.id)).next_seq == stored
    await session.writer.flush()
    assert not session.writer.has_pending
    assert (await store.get_session(session.id)).next_seq == stored + 1
    assert (await Session.load(store, session.id, session.runtime)).label == "renamed"


async def test_a_closing_write_gives_back_only_a_lease_taken_for_the_turn_alone(store: BaseStore) -> None:
    session = await new_session(store)
    async with session.hold():  # held around several turns: a closing write keeps it
        session.writer.stage([make_event("label/set", {"label": "held"})])
        await session.writer.flush(closing_turn=True)
        assert session.lease is not None and (await store.get_session(session.id)).lease == session.lease
    async with session.hold(until_turn_end=True):
        session.writer.stage([make_event("label/set", {"label": "step"})])
        await session.writer.flush()  # not the closing write: the lease stays
        assert (await store.get_session(session.id)).lease is not None
        session.writer.stage([make_event("label/set", {"label": "closing"})])
        await session.writer.flush(closing_turn=True)
        assert session.lease is None and (await store.get_session(session.id)).lease is None


async def test_a_write_behind_another_writers_events_is_rebased_after_them(store: BaseStore) -> None:
    session = await new_session(store)
    other = await Session.load(store, session.id, session.runtime)
    await other.put_insight("written meanwhile")
    await session.set_label("renamed")  # its expected seq is stale: rebased once, after the insight
    events = await store.read_events(session.id)
    check_log(events)
    assert [e.type for e in events[-2:]] == ["insight/put", "label/set"]
    assert (session.insight, session.label) == ("written meanwhile", "renamed")
    assert session.history.next_seq == len(events)


async def test_a_refused_write_leaves_the_history_equal_to_the_store(store: BaseStore) -> None:
    session = await new_session(store)
    session.writer.stage([make_event("label/set", {"label": "bad \x00 label"})])
    with pytest.raises(FormatError):
        await session.writer.flush()
    assert session.label == "start" and not session.writer.has_pending
    assert session.history.next_seq == (await store.get_session(session.id)).next_seq


async def test_writing_to_an_archived_session_is_refused_unless_told_not_to_check(store: BaseStore) -> None:
    session = await new_session(store)
    await session.archive()
    with pytest.raises(ArchivedError):
        await session.writer.write([make_event("label/set", {"label": "late"})])
    # How the agent records a fork after checking the source itself: the check is not repeated.
    await session.writer.write([make_event("label/set", {"label": "late"})], check_writable=False)
    assert session.label == "late"


async def test_a_held_lease_is_renewed_every_third_of_its_ttl_and_no_more_once_given_back(store: BaseStore) -> None:
    runtime = SessionRuntime(llm=ScriptedLLM(default="ok"), lease_ttl=0.3)
    session = await Session.create(store, runtime, label="held")
    async with session.hold():
        first = (await store.get_session(session.id)).lease
        assert first is not None
        await asyncio.sleep(0.45)  # past the first renewal (0.1 s) and into the following beats
        renewed = (await store.get_session(session.id)).lease
        assert renewed is not None and renewed.token == first.token and renewed.expires_at > first.expires_at
        assert session.writer.lease.current is not None and session.writer.lease.current.token == first.token
    assert (await store.get_session(session.id)).lease is None
    await asyncio.sleep(0.25)  # no beat left behind to bring it back
    assert (await store.get_session(session.id)).lease is None
