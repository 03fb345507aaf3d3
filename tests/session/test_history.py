"""History and its fold segments: a cold open from stored segments folds exactly what a full fold does."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stellate.llm.scripted import ScriptedLLM
from stellate.llm.tokens import HeuristicTokenCounter
from stellate.log import Event, Message, NewEvent, SystemMessage, make_event
from stellate.log.segments import decode_segment, encode_segment
from stellate.session import Session, SessionRuntime
from stellate.session.history import History
from stellate.store import BaseStore, Boundary, ForkRequest, SessionId
from stellate.store.sqlite import SqliteStore

SEGMENT = 12  # events per segment in these tests, so a short log spans many segments


@pytest.fixture(autouse=True)
def short_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("stellate.session.history.SEGMENT_EVENTS", SEGMENT)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = await SqliteStore.open(str(tmp_path / "s.db"))
    yield s
    await s.close()


def runtime() -> SessionRuntime:
    return SessionRuntime(llm=ScriptedLLM(["ok"] * 5), token_counter=HeuristicTokenCounter())


def plain_turn(n: int, text: str = "hi") -> list[NewEvent]:
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": f"{text} {n}"}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": f"answer {n}", "tool_calls": []}),
        make_event("step/end", {"turn": n, "step": 1}),
        make_event("turn/end", {"turn": n, "reason": "completed"}),
    ]


def tool_turn(n: int) -> list[NewEvent]:
    call = {"id": f"c{n}", "name": "search", "arguments": '{"q": "x"}'}
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": f"look {n}"}),
        make_event("step/start", {"turn": n, "step": 1}),
        make_event("assistant/message", {"content": "", "tool_calls": [call]}),
        make_event("tool/call", {"call_id": f"c{n}", "name": "search", "arguments": '{"q": "x"}'}),
        make_event("tool/result", {"call_id": f"c{n}", "name": "search", "content": "found", "is_error": False}),
        make_event("step/end", {"turn": n, "step": 1}),
        make_event("step/start", {"turn": n, "step": 2}),
        make_event("assistant/message", {"content": f"found it {n}", "tool_calls": []}),
        make_event("step/end", {"turn": n, "step": 2}),
        make_event("turn/end", {"turn": n, "reason": "completed"}),
    ]


def failed_turn(n: int) -> list[NewEvent]:
    return [
        make_event("turn/start", {"turn": n}),
        make_event("user/message", {"content": "lost"}),
        make_event("turn/end", {"turn": n, "reason": "error"}),
    ]


async def build_log(store: BaseStore, turns: int = 30) -> SessionId:
    """A log with every kind of event a fold cares about, appended a turn at a time."""
    record = await store.create_session(events=[make_event("session/created", {"label": "long"})])
    sid = record.id
    await store.append(sid, [make_event("system_prompt/set", {"content": "be brief"})])
    for n in range(1, turns + 1):
        kind = n % 5
        events = tool_turn(n) if kind == 1 else failed_turn(n) if kind == 2 else plain_turn(n)
        await store.append(sid, events)
        if n == 12:
            await store.append(sid, [make_event("compaction/summary", {"through_seq": 40, "summary": "early talk"})])
        if kind == 3:
            await store.append(sid, [make_event("memory/put", {"content": f"memory {n}", "turn": n})])
            await store.append(sid, [make_event("insight/put", {"content": f"insight {n}"})])
        if n == 20:
            await store.append(sid, [make_event("label/set", {"label": "renamed"})])
    return sid


def state(history: History) -> tuple[Any, ...]:
    fold = history.fold
    return (
        fold.messages(),
        fold.kept_seqs,
        fold.kept_weights,
        fold.kept_weight,
        fold.summary,
        fold.summary_through_seq,
        history.cursor,
        history.slots,
        history.last_fork_turn,
        history.consolidated_turn,
        history.bounded_through,
        history.pending_calls,
    )


async def reference(store: BaseStore, sid: SessionId, inherited: int = 0) -> tuple[Any, ...]:
    """The state folded from every event, without any segment."""
    session = Session(store, await store.get_session(sid), runtime())
    history = History(inherited=inherited, weigh=session.estimator.weigh)
    history.absorb(await store.read_events(sid))
    return state(history)


def segment_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT session_id, start_seq, end_seq, data FROM fold_segments ORDER BY start_seq"
        ).fetchall()


def rewrite_segments(path: Path, change: Any) -> None:
    conn = sqlite3.connect(path)
    with conn:
        for sid, start, end, data in segment_rows(path):
            conn.execute(
                "UPDATE fold_segments SET data = ? WHERE session_id = ? AND start_seq = ? AND end_seq = ?",
                (change(data), sid, start, end),
            )
    conn.close()


async def test_a_cold_open_stores_segments_and_the_next_one_starts_from_them(store: SqliteStore) -> None:
    sid = await build_log(store)
    expected = await reference(store, sid)
    first = await Session.load(store, sid, runtime())
    assert state(first.history) == expected
    rows = segment_rows(Path(store.path))
    assert len(rows) > 5 and rows[0][1] == 0
    assert all(a[2] == b[1] for a, b in zip(rows, rows[1:], strict=False))  # contiguous from seq 0
    second = await Session.load(store, sid, runtime())
    assert second.history.segment_end == rows[-1][2]
    assert state(second.history) == expected
    assert second.context() == first.context()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1] + ("}" if data[-1] != "}" else "]"),  # one character off: checksum fails
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: "not a segment",
        lambda data: data.replace('"v":1', '"v":99'),  # a future version (checksum fails too)
    ],
    ids=["flipped", "truncated", "garbage", "version"],
)
async def test_damaged_segments_cost_time_never_correctness(store: SqliteStore, damage: Any) -> None:
    sid = await build_log(store)
    expected = await reference(store, sid)
    await Session.load(store, sid, runtime())
    rewrite_segments(Path(store.path), damage)
    loaded = await Session.load(store, sid, runtime())
    assert state(loaded.history) == expected


async def test_a_damaged_segment_in_the_middle_is_folded_from_events_then_replaced(store: SqliteStore) -> None:
    sid = await build_log(store)
    expected = await reference(store, sid)
    await Session.load(store, sid, runtime())
    rows = segment_rows(Path(store.path))
    middle = rows[len(rows) - 2]
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE fold_segments SET data = 'x' WHERE start_seq = ?", (middle[1],))
    conn.close()
    loaded = await Session.load(store, sid, runtime())
    assert state(loaded.history) == expected
    assert all(decode_segment(row[3]) is not None for row in segment_rows(Path(store.path)))


async def test_deleted_segments_change_nothing_and_are_rebuilt(store: SqliteStore) -> None:
    sid = await build_log(store)
    expected = await reference(store, sid)
    await Session.load(store, sid, runtime())
    with sqlite3.connect(store.path) as conn:
        conn.execute("DELETE FROM fold_segments")
    conn.close()
    assert state((await Session.load(store, sid, runtime())).history) == expected
    assert segment_rows(Path(store.path))


async def test_a_segment_with_a_valid_checksum_but_another_range_is_not_used(store: SqliteStore) -> None:
    sid = await build_log(store)
    expected = await reference(store, sid)
    await Session.load(store, sid, runtime())
    first = segment_rows(Path(store.path))[0]
    segment = decode_segment(first[3])
    assert segment is not None
    with sqlite3.connect(store.path) as conn:  # a valid segment of [0, end) stored as if it covered [0, end + 1)
        conn.execute("DELETE FROM fold_segments WHERE start_seq = 0")
        conn.execute("INSERT INTO fold_segments VALUES (?, 0, ?, ?)", (sid, first[2] + 1, encode_segment(segment)))
    conn.close()
    assert state((await Session.load(store, sid, runtime())).history) == expected


async def test_a_fork_of_a_cold_source_reads_the_source_segments_up_to_its_boundary(store: SqliteStore) -> None:
    sid = await build_log(store)
    await Session.load(store, sid, runtime())  # the source's segments are stored
    boundary = (await store.read_events(sid, types=["turn/end"]))[17].seq
    child = await store.create_session(
        fork=ForkRequest(source_id=sid, point=Boundary(seq=boundary)),
        events=[make_event("session/created", {"label": "child"})],
    )
    await store.append(child.id, plain_turn(child.turn_count + 1, "child"))
    expected = await reference(store, child.id, inherited=child.inherited)
    session = await Session.load(store, child.id, runtime())
    assert session.history.segment_end > 0  # started from the source's segments
    assert state(session.history) == expected
    assert session.label == "child" and session.memory is None  # slots are never inherited


async def test_context_at_rebuilds_past_contexts_alike_with_and_without_segments(store: SqliteStore) -> None:
    sid = await build_log(store)
    session = await Session.load(store, sid, runtime())
    replies = [e.seq for e in await store.read_events(sid, types=["assistant/message"])]
    with_segments = [await session.context_at(seq) for seq in replies]
    with sqlite3.connect(store.path) as conn:
        conn.execute("DELETE FROM fold_segments")
    conn.close()
    without = [await session.context_at(seq) for seq in replies]
    assert with_segments == without


async def test_weights_of_another_token_counter_are_recomputed(store: SqliteStore) -> None:
    sid = await build_log(store)
    await Session.load(store, sid, runtime())

    class Doubled(HeuristicTokenCounter):
        def count(self, messages: Any) -> int:
            return 2 * super().count(messages)

    other = SessionRuntime(llm=ScriptedLLM(["ok"]), token_counter=Doubled())
    loaded = await Session.load(store, sid, other)
    assert loaded.history.fold.kept_weights == [loaded.estimator.weigh(m) for m in loaded.history.fold.kept]


async def test_turns_after_a_cold_open_store_further_segments(store: SqliteStore) -> None:
    sid = await build_log(store, turns=3)
    session = await Session.load(store, sid, SessionRuntime(llm=ScriptedLLM(["ok"] * 5)))
    for _ in range(5):
        await session.send("more")
    rows = segment_rows(Path(store.path))
    assert rows and rows[-1][2] > 30
    again = await Session.load(store, sid, SessionRuntime(llm=ScriptedLLM(["ok"])))
    messages: list[Message] = await again.messages()
    assert messages == await session.messages()


def test_history_messages_put_the_lead_before_what_a_failed_compression_left() -> None:
    history = History(inherited=0)
    events = [*plain_turn(1, "old"), *plain_turn(2, "kept")]
    events.append(
        make_event("error/reported", {"code": "compress_failed", "message": "down", "dropped_through_seq": 5})
    )
    history.absorb(Event(seq=i, type=e.type, time=e.time, data=e.data) for i, e in enumerate(events))
    lead = [SystemMessage(content="prompt")]
    assert [m.content for m in history.history_messages(lead)] == ["prompt", "kept 2", "answer 2"]
    assert [m.content for m in history.history_messages()] == ["kept 2", "answer 2"]
