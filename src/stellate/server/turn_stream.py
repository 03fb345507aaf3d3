"""A turn's events as the `Source` of its SSE stream: pulled by the stream's writer, encoded once per write.

The turn records each event and wakes the writer only when it waits; a writer waiting out a gather interval
(see `stellate.server.event_stream`) costs nothing per chunk the model streams meanwhile. When it writes, it
takes every event recorded since its last write: each is made JSON once for every watcher of the turn
(`LiveTurn.json_of`), and text chunks that follow one another become one ``text`` event whose text is theirs
joined (clients concatenate text events, so the text read is the same; a loaded worker makes one event, not
ten). ``id`` counts the stream's events; the last is a ``problem`` event when the turn failed or was cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from stellate.engine.events import TextChunk
from stellate.server.event_stream import ServerSentEvent, Source
from stellate.server.problems import problem_of
from stellate.server.sse import json_text
from stellate.server.turns import LiveTurn

__all__ = ["TurnSource"]


class TurnSource(Source):
    """The events of ``live`` from its start, then a ``problem`` if it failed.

    ``first``: messages sent before them, with ids of their own.
    """

    def __init__(self, live: LiveTurn, first: Iterable[ServerSentEvent] = ()) -> None:
        self.live = live
        self.first = [event.encode() for event in first]
        self.count = 0
        self.sent = 0
        """Events of the turn taken so far."""
        self.over = False
        """The turn has ended and everything of it (the problem too) was taken."""
        self.started = 0.0

    def start(self) -> None:
        """Note when the stream began."""
        self.started = asyncio.get_running_loop().time()

    def take(self) -> tuple[bytes, float] | None:
        """Every event recorded since the last call, text runs joined; the problem after the end."""
        live, start = self.live, self.sent
        end = len(live.events)
        done = live.done
        parts = self.first
        self.first = []
        first_at = live.arrived[start] if end > start else self.started
        index = start
        while index < end:
            event = live.events[index][0]
            if isinstance(event, TextChunk):
                run = index + 1
                while run < end and _joins(live.events[run][0], event):
                    run += 1
                if run - index > 1:
                    texts = "".join(e.text for e, _ in live.events[index:run] if isinstance(e, TextChunk))
                    data = json_text({"session_id": event.session_id, "text": texts, "type": "text"})
                    parts.append(self._message(data, "text"))
                    index = run
                    continue
            parts.append(self._message(live.json_of(index), event.type))
            index += 1
        self.sent = end
        if done and not self.over:
            self.over = True
            if live.error is not None:
                parts.append(self._message(json_text(problem_of(live.error).model_dump()), "problem"))
        if not parts:
            return None
        return b"".join(parts), first_at

    def _message(self, data: str, event: str) -> bytes:
        """One message (compact JSON holds no line break, so its data is one line)."""
        self.count += 1
        return f"id: {self.count}\r\nevent: {event}\r\ndata: {data}\r\n\r\n".encode()

    @property
    def ended(self) -> bool:
        """Whether the turn ended and all of it was taken."""
        return self.over

    async def wait(self) -> None:
        """Until the turn records an event or ends."""
        await self.live.changed(self.sent)

    async def until_end(self) -> None:
        """Until the turn ends."""
        await self.live.finished()

    async def pause(self, seconds: float) -> None:
        """After ``seconds``, or at the turn's end."""
        await self.live.pause(seconds)


def _joins(event: object, text: TextChunk) -> bool:
    return isinstance(event, TextChunk) and event.session_id == text.session_id
