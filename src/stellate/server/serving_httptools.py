"""`stellate.server.serving.HeaderDeadlineProtocol` on uvicorn's httptools parser (imported only when installed)."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from stellate.server.serving import HeaderDeadline

__all__ = ["HttpToolsDeadlineProtocol"]


class HttpToolsDeadlineProtocol(HeaderDeadline, HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers do not arrive in time."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn annotates BaseTransport
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

    def _waiting(self) -> bool:
        return self._partial or self.cycle is None
