"""The server's SSE response: one stream costs its generator, one watcher task and a few objects, nothing more.

sse-starlette's ``EventSourceResponse`` runs four tasks per stream inside an anyio task group (the sender, a
pinger, a disconnect listener and a shutdown listener), each with its cancel scopes and a send lock; an idle
stream held 40-60 KiB of a worker's memory and its pings woke every stream on their own timers (issue 22).
`EventStream` sends from the request's own task, one write for whatever its `Source` has gathered (chunk
coalescing: a loaded worker writes less often, not later), with the keep-alive comment when the stream has been
quiet for `PING_SECONDS`; one watcher task waits for the client's disconnect. A generator's messages gather in
a task of their own; a turn's events are pulled by the writer when it writes (`stellate.server.turn_stream`),
so a waiting writer costs nothing per chunk.
Server shutdown ends every open stream, as before: one poller per event loop, running only while streams are
open, watches uvicorn's exit flag, found through its signal handler as sse-starlette finds it.

What a client receives is unchanged: ``text/event-stream`` with ``Cache-Control: no-store``, messages of
``id:``, ``event:`` and ``data:`` lines ended by a blank line (CRLF), ``:`` comments for keep-alives.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import weakref
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

__all__ = [
    "GATHER_SECONDS",
    "LAG_SECONDS",
    "MAX_GATHER_SECONDS",
    "PING_SECONDS",
    "EventStream",
    "ServerSentEvent",
    "Source",
    "open_streams",
]

PING_SECONDS = 15.0
"""Keep-alive comments on a quiet stream, so proxies do not close it."""
GATHER_SECONDS = 0.1
"""A stream whose writes lag behind its messages writes at most once per this long, all that gathered meanwhile:
at most this much added delay, and a loaded worker makes one write per interval, not one per chunk."""
MAX_GATHER_SECONDS = 0.2
"""The longest wait between two writes of a lagging stream: it waits `GATHER_SECONDS` plus its lag, up to this
(the more the worker lags, the fewer writes it makes)."""
LAG_SECONDS = 0.01
"""A write that leaves this long (or more) after its first message came means the worker is falling behind."""
_SHUTDOWN_POLL = 0.5
_SEP = "\r\n"
_LINES = re.compile(r"\r\n|\r|\n")
_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


class ServerSentEvent:
    """One message of a stream: ``data`` (text; several lines become several ``data:`` lines), or a comment."""

    __slots__ = ("comment", "data", "event", "id")

    def __init__(
        self, data: str | None = None, *, event: str | None = None, id: str | None = None, comment: str | None = None
    ) -> None:
        self.data = data
        self.event = event
        self.id = id
        self.comment = comment

    def encode(self) -> bytes:
        """The message's bytes on the wire."""
        parts: list[str] = []
        if self.comment is not None:
            parts += [f": {line}{_SEP}" for line in _LINES.split(self.comment)]
        if self.id is not None:
            parts.append(f"id: {_LINES.sub('', self.id)}{_SEP}")
        if self.event is not None:
            parts.append(f"event: {_LINES.sub('', self.event)}{_SEP}")
        if self.data is not None:
            data = self.data
            if "\n" in data or "\r" in data:
                parts += [f"data: {line}{_SEP}" for line in _LINES.split(data)]
            else:
                parts.append(f"data: {data}{_SEP}")
        parts.append(_SEP)
        return "".join(parts).encode()


_PING = ServerSentEvent(comment="ping").encode()


class Source:
    """What a stream sends, pulled by its writer whenever it writes (the base of every stream's messages).

    `take` hands over everything gathered since the last call as one body, so a source that is told of each
    new message (a turn's events) costs nothing per message while its writer waits out a gather interval.
    """

    def start(self) -> None:
        """Begin (on the request's event loop)."""

    def take(self) -> tuple[bytes, float] | None:
        """What gathered (bytes on the wire) and when its oldest message came (event-loop time), or None."""
        raise NotImplementedError

    @property
    def ended(self) -> bool:
        """Whether nothing more will come (what `take` still holds aside)."""
        raise NotImplementedError

    def finish(self) -> None:
        """After the end: raise what ended the source, if it failed."""

    async def wait(self) -> None:
        """Return once `take` may have something, or at the end."""
        raise NotImplementedError

    async def until_end(self) -> None:
        """Return at the end."""
        raise NotImplementedError

    async def pause(self, seconds: float) -> None:
        """Return after ``seconds``, or at the end if sooner."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.until_end()

    async def close(self) -> None:
        """Stop (the stream is over, whichever way it ended)."""


class _Generated(Source):
    """The messages an async iterator yields, gathered by a task of their own."""

    def __init__(self, events: AsyncIterator[ServerSentEvent | bytes]) -> None:
        self.events = events
        self.buffer: list[bytes] = []
        self.ready = asyncio.Event()
        self.done = asyncio.Event()
        self.first_at = 0.0
        self.producer: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.producer = asyncio.get_running_loop().create_task(self._produce())

    async def _produce(self) -> None:
        buffer, ready, loop = self.buffer, self.ready, asyncio.get_running_loop()
        try:
            async for event in self.events:
                if not buffer:
                    self.first_at = loop.time()
                buffer.append(event if isinstance(event, bytes) else event.encode())
                ready.set()
        finally:
            self.done.set()
            ready.set()  # the end (or a failure) wakes the writer too

    def take(self) -> tuple[bytes, float] | None:
        buffer = self.buffer
        if not buffer:
            return None
        body = buffer[0] if len(buffer) == 1 else b"".join(buffer)
        buffer.clear()
        return body, self.first_at

    @property
    def ended(self) -> bool:
        return self.producer is not None and self.producer.done()

    def finish(self) -> None:
        assert self.producer is not None
        self.producer.result()

    async def wait(self) -> None:
        self.ready.clear()
        await self.ready.wait()

    async def until_end(self) -> None:
        await self.done.wait()

    async def close(self) -> None:
        if self.producer is not None:
            self.producer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.producer
        aclose = getattr(self.events, "aclose", None)
        if aclose is not None:
            await aclose()


class EventStream(Response):
    """``text/event-stream`` of what ``events`` yields, until it ends, the client goes or the server stops."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[ServerSentEvent | bytes] | Source,
        *,
        ping: float = PING_SECONDS,
        gather: float = GATHER_SECONDS,
    ) -> None:
        self.source = events if isinstance(events, Source) else _Generated(events)
        self.ping = ping
        self.gather = gather
        self.status_code = 200
        self.background = None
        self.raw_headers = list(_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the stream (ASGI)."""
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        if scope.get("method", "GET").upper() == "HEAD":  # headers only: a stream for HEAD would never end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            await self.source.close()
            return
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        stream = _Stream(task, send)
        streams = _streams()
        streams.add(stream)
        source = self.source
        source.start()
        watcher = loop.create_task(stream.watch(receive))
        try:
            await stream.write(source, self.ping, self.gather)
        except asyncio.CancelledError:
            if not stream.stopped or task.uncancel() > 0:
                raise  # not (only) ours: the server cancels the request
        finally:
            stream.writing = False
            streams.discard(stream)
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
            await source.close()
        if not stream.gone:  # ended by the generator or the server's shutdown: the response completes
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Stream:
    """One open stream: its request's task, which sends what its source gathered, in one write.

    While the worker keeps up, that is one message a write, sent at once; once a write leaves `LAG_SECONDS`
    after its first message came, the worker is behind and the next write waits until `GATHER_SECONDS` after
    this one, so the messages that arrive meanwhile leave together (chunk coalescing): a loaded worker makes
    fewer writes instead of queueing more.
    """

    __slots__ = ("__weakref__", "gone", "send", "stopped", "task", "writing")

    def __init__(self, task: asyncio.Task[Any], send: Send) -> None:
        self.task = task
        self.send = send
        self.writing = True
        self.stopped = False
        """Ended by its watcher (the client went) or by shutdown: the cancellation is the stream's own."""
        self.gone = False

    async def write(self, source: Source, ping: float, gather: float) -> None:
        """Send what gathers until the source ends (raising what it raised); a comment when quiet ``ping`` s.

        After a write that left late (see the class) it waits ``gather`` seconds, unless the source has
        ended, so what arrives meanwhile leaves together.
        """
        send, loop = self.send, asyncio.get_running_loop()
        while True:
            taken = source.take()
            if taken is not None:
                body, first_at = taken
                lag = loop.time() - first_at
                await send({"type": "http.response.body", "body": body, "more_body": True})
                if lag >= LAG_SECONDS and gather > 0 and not source.ended:
                    await source.pause(min(gather + lag, MAX_GATHER_SECONDS))  # the source's end cuts it short
                continue
            if source.ended:
                source.finish()
                return
            try:
                async with asyncio.timeout(ping):
                    await source.wait()
            except TimeoutError:
                await send({"type": "http.response.body", "body": _PING, "more_body": True})

    def stop(self, *, gone: bool) -> None:
        if self.writing and not self.stopped:
            self.stopped, self.gone = True, gone
            self.task.cancel()

    async def watch(self, receive: Receive) -> None:
        """Until the client disconnects: then stop the stream."""
        while (await receive())["type"] != "http.disconnect":
            pass
        self.stop(gone=True)


class _LoopStreams:
    """The open streams of one event loop, and the poller that ends them when the server is told to exit."""

    def __init__(self) -> None:
        self.open: weakref.WeakSet[_Stream] = weakref.WeakSet()
        self.poller: asyncio.Task[None] | None = None

    def add(self, stream: _Stream) -> None:
        self.open.add(stream)
        if self.poller is None or self.poller.done():
            self.poller = asyncio.get_running_loop().create_task(self._poll())

    def discard(self, stream: _Stream) -> None:
        self.open.discard(stream)

    async def _poll(self) -> None:
        while self.open:
            if _server_exiting():
                for stream in list(self.open):
                    stream.stop(gone=False)
                return
            await asyncio.sleep(_SHUTDOWN_POLL)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopStreams] = weakref.WeakKeyDictionary()


def _streams() -> _LoopStreams:
    loop = asyncio.get_running_loop()
    streams = _BY_LOOP.get(loop)
    if streams is None:
        streams = _BY_LOOP[loop] = _LoopStreams()
    return streams


def open_streams() -> int:
    """How many streams are open on the running event loop."""
    streams = _BY_LOOP.get(asyncio.get_running_loop())
    return len(streams.open) if streams is not None else 0


def _server_exiting() -> bool:
    """Whether the uvicorn server of this process was told to exit (its SIGTERM handler is its bound method)."""
    handler = signal.getsignal(signal.SIGTERM)
    return bool(getattr(getattr(handler, "__self__", None), "should_exit", False))
