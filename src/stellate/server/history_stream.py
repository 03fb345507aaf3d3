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
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass

from stellate.agent import Agent
from stellate.errors import StoreError, UsageError
from stellate.server.event_stream import ServerSentEvent
from stellate.server.history_fanout import Item, Listener, listen
from stellate.server.sse import POLL_SECONDS, StoreWait, json_text
from stellate.server.turns import event_data
from stellate.store.history import EventHistory, HistoryPage

__all__ = ["RESET_EVENT", "history_of", "tail_history"]

RESET_EVENT = "reset"
"""Sent when the client's ``Last-Event-ID`` is older than the history (or not one of its ids)."""
_BATCH = 500


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
    history = history_of(await agent.store())
    wanted = None if types is None else frozenset(types)
    wait, position = StoreWait(), _Position(after)
    # Listening before the first read: nothing slips by (see `stellate.server.history_fanout`).
    fanout, listener = await listen(agent, texts=wanted is None or "text" in wanted)
    try:
        woke = True
        while True:
            if woke:
                async for sent in _catch_up(history, position, wanted, wait):
                    yield sent
            woke, items = await _next(agent, listener)
            # The rows kept before each chunk go first, those after it wait: order by mark, not by arrival.
            for mark, chunk in sorted(items, key=lambda i: i[0] or 0):
                if mark is not None and (position.last or 0) < mark:
                    async for sent in _catch_up(history, position, wanted, wait, until=mark):
                        yield sent
                yield ServerSentEvent(data=json_text(event_data(chunk)), event=chunk.type)
    finally:
        fanout.remove(listener)


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


async def _next(agent: Agent, listener: Listener) -> tuple[bool, list[Item]]:
    """Whether the history grew and the text chunks that came: at least one (after `POLL_SECONDS`: reread anyway).

    On a wake, this worker's agent first finishes handing out what it has written (the history rows of a batch
    are signalled before the batch's text chunks reach the stream), so the chunks arrive with the wake.
    """
    await listener.wait(POLL_SECONDS)
    if not listener.pending:
        return True, []
    if listener.woke:
        await agent.events_recorded()
        await asyncio.sleep(0)  # the fan-out's turn to hand over the chunks
    return listener.take()
