"""A turn's SSE stream as its writer takes it: every event once, in order, text runs joined, the problem last."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from stellate.engine.events import MessageReceived, RoundEnd, RoundStart, TextChunk, TurnEvent
from stellate.errors import ProviderError
from stellate.server.turn_stream import TurnSource
from stellate.server.turns import LiveTurn


def messages(body: bytes) -> list[tuple[str, str, dict[str, object]]]:
    """(id, event, data) of each message of ``body``."""
    found = []
    for block in body.decode().split("\r\n\r\n"):
        if block:
            fields = dict(line.split(": ", 1) for line in block.split("\r\n"))
            found.append((fields["id"], fields["event"], json.loads(fields["data"])))
    return found


async def test_text_chunks_gathered_between_writes_leave_as_one_event_and_every_event_once() -> None:
    live = LiveTurn("s1")
    gate: asyncio.Queue[list[TurnEvent] | None] = asyncio.Queue()

    async def events() -> AsyncIterator[TurnEvent]:
        while (batch := await gate.get()) is not None:
            for event in batch:
                yield event

    live.task = asyncio.get_running_loop().create_task(live.drive(events()))
    source = TurnSource(live)
    source.start()
    assert source.take() is None and not source.ended

    texts = [TextChunk(session_id="s1", text=piece) for piece in ("Hel", "lo", " wor")]
    await gate.put([MessageReceived(session_id="s1", content="hi"), RoundStart(session_id="s1", round=1), *texts])
    await source.wait()
    await asyncio.sleep(0)
    taken = source.take()
    assert taken is not None
    got = messages(taken[0])
    assert [(i, e) for i, e, _ in got] == [("1", "message_received"), ("2", "round_start"), ("3", "text")]
    assert got[2][2] == {"session_id": "s1", "text": "Hello wor", "type": "text"}

    await gate.put([TextChunk(session_id="s1", text="ld"), RoundEnd(session_id="s1", round=1)])
    await gate.put(None)
    await live.finished()
    taken = source.take()
    assert taken is not None and source.ended
    assert [(i, e, d.get("text")) for i, e, d in messages(taken[0])] == [("4", "text", "ld"), ("5", "round_end", None)]
    assert source.take() is None


async def test_a_failed_turn_ends_its_stream_with_a_problem_after_its_events() -> None:
    live = LiveTurn("s1")

    async def events() -> AsyncIterator[TurnEvent]:
        yield TextChunk(session_id="s1", text="par")
        raise ProviderError("the model went away")

    live.task = asyncio.get_running_loop().create_task(live.drive(events()))
    source = TurnSource(live)
    source.start()
    await source.until_end()
    taken = source.take()
    assert taken is not None and source.ended
    got = messages(taken[0])
    assert [(i, e) for i, e, _ in got] == [("1", "text"), ("2", "problem")]
    assert got[1][2]["code"] == "provider_error"


async def test_a_pause_ends_at_the_turns_end_and_each_watcher_gets_the_same_json() -> None:
    live = LiveTurn("s1")
    done = asyncio.Event()

    async def events() -> AsyncIterator[TurnEvent]:
        yield MessageReceived(session_id="s1", content="hi")
        await done.wait()

    live.task = asyncio.get_running_loop().create_task(live.drive(events()))
    await live.changed(0)
    assert live.json_of(0) is live.json_of(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    loop.call_later(0.05, done.set)
    await live.pause(30)
    assert live.done and loop.time() - started < 20
