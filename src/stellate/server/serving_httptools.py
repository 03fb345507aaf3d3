"""`stellate.server.serving.HeaderDeadlineProtocol` on uvicorn's httptools parser (imported only when installed)."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from stellate.server.defaults import DEFAULT_HEADER_TIMEOUT

__all__ = ["HttpToolsDeadlineProtocol"]

_TIMEOUT_ANSWER = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class HttpToolsDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers do not arrive in time."""

    header_timeout: ClassVar[float] = DEFAULT_HEADER_TIMEOUT
    _header_timer: asyncio.TimerHandle | None = None
    _partial = False  # a request has begun and its headers are not all here

    @classmethod
    def with_timeout(cls, seconds: float) -> type[HttpToolsDeadlineProtocol]:
        """The protocol class with its deadline (uvicorn builds protocols from a class)."""
        return type(cls.__name__, (cls,), {"header_timeout": seconds})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the deadline: a connection that never sends a request is closed too."""
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        """A request's first byte: its headers have until the deadline."""
        super().on_message_begin()
        self._partial = True
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        """The headers are in: no deadline until the next request begins."""
        self._partial = False
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadline."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or (self.cycle is not None and not self._partial):
            return
        if self._partial:  # a client that sent nothing (a browser's preconnect) is closed without a word
            self.transport.write(_TIMEOUT_ANSWER)
        self.transport.close()
