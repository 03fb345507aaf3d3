"""How the app runs on uvicorn: its HTTP parser, its connection timeouts, and a deadline for request headers.

uvicorn times out only idle keep-alive connections: a client that opens a connection and sends nothing, or
sends half its headers and stops (slowloris), holds a connection and a file descriptor forever. The
protocol below closes such connections after `DEFAULT_HEADER_TIMEOUT` seconds; the body has its own deadline
in `stellate.server.limits`. Keep-alive outlasts the idle timeouts of common proxies and client pools, so a
connection a client may still reuse is never closed under it.

The parser is httptools (C) when it is installed (the ``server`` extra pins it), h11 otherwise: a streamed
turn writes one chunk per event, and h11 spends more CPU per write than the rest of the chunk's path.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from stellate.server.defaults import DEFAULT_HEADER_TIMEOUT, DEFAULT_KEEP_ALIVE

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE",
    "BoundServer",
    "HeaderDeadline",
    "HeaderDeadlineProtocol",
    "uvicorn_config",
]

_TIMEOUT_ANSWER = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class HeaderDeadline:
    """The deadline's timer and its end, shared by the h11 and httptools protocols (a mixin)."""

    header_timeout: ClassVar[float] = DEFAULT_HEADER_TIMEOUT
    _header_timer: asyncio.TimerHandle | None = None
    _partial = False  # a request has begun and its headers are not all here
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    @classmethod
    def with_timeout(cls, seconds: float) -> type[asyncio.Protocol]:
        """The protocol class with its deadline (uvicorn builds protocols from a class)."""
        return type(cls.__name__, (cls,), {"header_timeout": seconds})

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _waiting(self) -> bool:
        """Whether the connection still waits for a request's headers."""
        raise NotImplementedError

    def _headers_late(self) -> None:
        self._header_timer = None
        if not self._waiting() or self.transport.is_closing():
            return
        if self._partial:  # a client that sent nothing (a browser's preconnect) is closed without a word
            self.transport.write(_TIMEOUT_ANSWER)
        self.transport.close()


class HeaderDeadlineProtocol(HeaderDeadline, H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request headers do not arrive in time."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the deadline: a connection that never sends a request is closed too."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Feed h11; the deadline runs from a request's first byte until its headers are complete."""
        waiting = self.conn.their_state is h11.IDLE
        if waiting and self._header_timer is None:
            self._arm()
        self._partial = waiting
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline."""
        self._disarm()
        super().connection_lost(exc)

    def _waiting(self) -> bool:
        return bool(self.conn.their_state is h11.IDLE)


def _protocol(header_timeout: float) -> type[asyncio.Protocol]:
    if importlib.util.find_spec("httptools") is not None:
        from stellate.server.serving_httptools import HttpToolsDeadlineProtocol

        return HttpToolsDeadlineProtocol.with_timeout(header_timeout)
    return HeaderDeadlineProtocol.with_timeout(header_timeout)


def uvicorn_config(
    app: Any,
    *,
    keep_alive: int = DEFAULT_KEEP_ALIVE,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    **options: Any,
) -> uvicorn.Config:
    """The uvicorn configuration stellate serves ``app`` with; ``options`` go to `uvicorn.Config` as they are."""
    return uvicorn.Config(
        app,
        http=_protocol(header_timeout),
        timeout_keep_alive=keep_alive,
        **options,
    )


class BoundServer(uvicorn.Server):
    """A uvicorn server on a socket bound (and listening) beforehand, so binding errors come before any output."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket) -> None:
        super().__init__(config)
        self.sock = sock

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve on the bound socket until stopped."""
        await super().serve(sockets or [self.sock])
