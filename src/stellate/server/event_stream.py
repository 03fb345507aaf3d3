"""The server's SSE response: one stream costs its generator, one watcher task and a few objects, nothing more.

sse-starlette's ``EventSourceResponse`` runs four tasks per stream inside an anyio task group (the sender, a
pinger, a disconnect listener and a shutdown listener), each with its cancel scopes and a send lock; an idle
stream held 40-60 KiB of a worker's memory and its pings woke every stream on their own timers (issue 22).
`EventStream` sends from the request's own task and keeps one watcher per stream, which waits for the
client's disconnect and sends the keep-alive comment when the stream has been quiet for `PING_SECONDS`.
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
from starlette.types import Message, Receive, Scope, Send

__all__ = ["PING_SECONDS", "EventStream", "ServerSentEvent", "open_streams"]

PING_SECONDS = 15.0
"""Keep-alive comments on a quiet stream, so proxies do not close it."""
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


class EventStream(Response):
    """``text/event-stream`` of what ``events`` yields, until it ends, the client goes or the server stops."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[ServerSentEvent], *, ping: float = PING_SECONDS) -> None:
        self.events = events
        self.ping = ping
        self.status_code = 200
        self.background = None
        self.raw_headers = list(_HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the stream (ASGI)."""
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        if scope.get("method", "GET").upper() == "HEAD":  # headers only: a stream for HEAD would never end
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        task = asyncio.current_task()
        assert task is not None
        stream = _Stream(task, send)
        streams = _streams()
        streams.add(stream)
        watcher = asyncio.get_running_loop().create_task(stream.watch(receive, self.ping))
        try:
            await stream.pump(self.events)
        except asyncio.CancelledError:
            if not stream.stopped or task.uncancel() > 0:
                raise  # not (only) ours: the server cancels the request
        finally:
            stream.pumping = False
            streams.discard(stream)
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
            aclose = getattr(self.events, "aclose", None)
            if aclose is not None:
                await aclose()
        if not stream.gone:  # ended by the generator or the server's shutdown: the response completes
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Stream:
    """One open stream: the task sending it, and when it last sent."""

    __slots__ = ("__weakref__", "gone", "last_sent", "pumping", "send", "stopped", "task")

    def __init__(self, task: asyncio.Task[Any], send: Send) -> None:
        self.task = task
        self.send = send
        self.pumping = True
        self.stopped = False
        """Ended by its watcher (the client went) or by shutdown: the cancellation is the stream's own."""
        self.gone = False
        self.last_sent = asyncio.get_running_loop().time()

    async def pump(self, events: AsyncIterator[ServerSentEvent]) -> None:
        send, loop = self.send, asyncio.get_running_loop()
        async for event in events:
            await send({"type": "http.response.body", "body": event.encode(), "more_body": True})
            self.last_sent = loop.time()

    def stop(self, *, gone: bool) -> None:
        if self.pumping and not self.stopped:
            self.stopped, self.gone = True, gone
            self.task.cancel()

    async def watch(self, receive: Receive, ping: float) -> None:
        """Until the client disconnects (then stop the stream); a keep-alive comment whenever it was quiet."""
        loop = asyncio.get_running_loop()
        while True:
            quiet_until = self.last_sent + ping
            message: Message | None = None
            try:
                async with asyncio.timeout_at(quiet_until):
                    message = await receive()
            except TimeoutError:
                pass
            if message is None:
                if loop.time() >= self.last_sent + ping:
                    await self.send({"type": "http.response.body", "body": _PING, "more_body": True})
                    self.last_sent = loop.time()
                continue
            if message["type"] == "http.disconnect":
                self.stop(gone=True)
                return


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
