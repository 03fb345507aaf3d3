"""``/v1/events`` as a stream: the tail of the space's event history, with text chunks live beside it.

Every agent event but text chunks is a row of the store's event history (`stellate.store.history`), written
by the agent that published it (`stellate.agent.relay`). The stream sends those rows in id order with their id
as the SSE ``id``, so a client that reconnects with ``Last-Event-ID`` resumes on any worker, after the last
row it saw. When rows it missed were pruned (or the id is not one of this history's), it gets a ``reset`` event
instead and goes on from the newest row: it should reload what it shows. Text chunks come live from the agent's
event bus (this worker's and, on PostgreSQL, the other workers'), without an id: they are not kept.

Order: each text chunk comes with the id of the newest row its agent kept before it (`Agent.text_chunks`), and
the stream sends the rows up to that id before the chunk, so a turn's ``message_received`` comes before its text.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass

from stellate.agent import Agent
from stellate.engine.events import TextChunk
from stellate.errors import StoreError, UsageError
from stellate.server.event_stream import ServerSentEvent
from stellate.server.sse import POLL_SECONDS, StoreWait, json_text
from stellate.server.turns import event_data
from stellate.store.history import HISTORY_CHANNEL, EventHistory, HistoryPage, parse_history_payload
from stellate.store.signals import RESYNC, Subscription

__all__ = ["RESET_EVENT", "history_of", "tail_history"]

RESET_EVENT = "reset"
"""Sent when the client's ``Last-Event-ID`` is older than the history (or not one of its ids)."""
_BATCH = 500
_WAKE = None  # in the stream's queue: the history grew (or signals were lost)
_Item = tuple[int | None, TextChunk] | None


def history_of(store: object) -> EventHistory:
    """The store's event history.

    Raises:
        UsageError: the store keeps none (every shipped backend does).
    """
    if not isinstance(store, EventHistory):
        raise UsageError(f"{type(store).__name__} keeps no event history; /v1/events needs one")
    return store


@dataclass(slots=True)
class _Position:
    """Where the stream is: the id of the last row it handled (sent, or skipped by the type filter)."""

    last: int | None


async def tail_history(
    agent: Agent, after: int | None, types: Collection[str] | None
) -> AsyncIterator[ServerSentEvent]:
    """The space's agent events after history id ``after`` (None: from now on), then new ones as they come."""
    store = await agent.store()
    history = history_of(store)
    wanted = None if types is None else frozenset(types)
    texts = wanted is None or "text" in wanted
    queue: asyncio.Queue[_Item] | None = asyncio.Queue() if texts else None
    wait, position = StoreWait(), _Position(after)
    with await store.signals.subscribe([HISTORY_CHANNEL]) as signals:  # before the first read: nothing slips by
        # Without text chunks the stream waits on its subscription itself: no pump task, no queue of its own.
        pumps: list[asyncio.Task[None]] = []
        if queue is not None:
            pumps = [asyncio.create_task(_wakes(signals, store.space, queue))]
            pumps.append(asyncio.create_task(_texts(agent, queue)))
        try:
            woke = True
            while True:
                if woke:
                    async for sent in _catch_up(history, position, wanted, wait):
                        yield sent
                if queue is not None:
                    items = await _next(agent, queue)
                else:
                    items = await _next_wake(agent, signals, store.space)
                woke = not items or _WAKE in items
                # The rows kept before each chunk go first, those after it wait: order by mark, not by arrival.
                for mark, chunk in sorted((i for i in items if i is not None), key=lambda i: i[0] or 0):
                    if mark is not None and (position.last or 0) < mark:
                        async for sent in _catch_up(history, position, wanted, wait, until=mark):
                            yield sent
                    yield ServerSentEvent(data=json_text(event_data(chunk)), event=chunk.type)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)


async def _catch_up(
    history: EventHistory,
    position: _Position,
    wanted: frozenset[str] | None,
    wait: StoreWait,
    *,
    until: int | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """Send the rows after the position (up to id ``until``), waiting out a store that cannot be reached."""
    while True:
        try:
            if position.last is None:
                position.last = (await history.read_history(limit=0)).last_id
            before = None if until is None else until + 1
            page = await history.read_history(after=position.last, before=before, limit=_BATCH)
        except StoreError as exc:
            yield wait.keep_alive(exc)
            await wait.pause()
            continue
        wait.answered()
        if _has_gap(page, position.last, until):
            yield _reset(position.last, page.last_id)
            position.last = page.last_id
            continue
        for entry in page.entries:
            if wanted is None or entry.kind in wanted:
                yield ServerSentEvent(data=entry.data, event=entry.kind, id=str(entry.id))
            position.last = entry.id
        if len(page.entries) < _BATCH:
            return


def _has_gap(page: HistoryPage, after: int, until: int | None) -> bool:
    """Whether rows after ``after`` (up to ``until``) are gone (pruned), or ``after`` is newer than this history."""
    if after > page.last_id:
        return True
    if page.entries:
        return page.entries[0].id != after + 1
    return min(page.last_id, until if until is not None else page.last_id) > after


def _reset(after: int, last_id: int) -> ServerSentEvent:
    reason = "unknown_id" if after > last_id else "history_gap"
    data = {"reason": reason, "after": after, "last_id": last_id}
    return ServerSentEvent(data=json_text(data), event=RESET_EVENT, id=str(last_id))


async def _next(agent: Agent, queue: asyncio.Queue[_Item]) -> list[_Item]:
    """What arrived: text chunks and wakes, at least one (none after `POLL_SECONDS`: reread anyway).

    On a wake, this worker's agent first finishes handing out what it has written (the history rows of a batch
    are signalled before the batch's text chunks reach the stream), so the chunks arrive with the wake.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(POLL_SECONDS):  # not `wait_for`: no task of its own while the stream idles
            items = [await queue.get()]
        if _WAKE in items:
            await agent.events_recorded()
        await asyncio.sleep(0)  # the pumps' turn
        while not queue.empty():
            items.append(queue.get_nowait())
        return items
    return []


async def _next_wake(agent: Agent, signals: Subscription, space: str) -> list[_Item]:
    """A wake (``[None]``) once the space's history grew or signals were lost; ``[]`` after `POLL_SECONDS`."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(POLL_SECONDS):
            while not _wakes_space(await signals.get(), space):
                pass
        await agent.events_recorded()
        return [_WAKE]
    return []


def _wakes_space(signal: tuple[str, str], space: str) -> bool:
    payload = signal[1]
    parsed = parse_history_payload(payload)
    return payload == RESYNC or (parsed is not None and parsed[1] == space)


async def _wakes(signals: Subscription, space: str, queue: asyncio.Queue[_Item]) -> None:
    async for signal in signals:
        if _wakes_space(signal, space):
            queue.put_nowait(_WAKE)


async def _texts(agent: Agent, queue: asyncio.Queue[_Item]) -> None:
    async for item in agent.text_chunks():
        queue.put_nowait(item)
