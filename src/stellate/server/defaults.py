"""The server's default limits, importable without the ``server`` extra (``stellate serve``'s flags show them)."""

from __future__ import annotations

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE",
    "DEFAULT_MAX_BODY",
    "DEFAULT_STREAMS_PER_CLIENT",
    "DEFAULT_STREAMS_PER_SPACE",
]

DEFAULT_MAX_BODY = 2 * 1024 * 1024
"""Bytes; a turn's message or a slot rarely needs more than a few kilobytes."""
DEFAULT_BODY_TIMEOUT = 30.0
"""Seconds a client has to send a whole body once its headers are in (2 MiB at 70 KiB/s)."""
DEFAULT_HEADER_TIMEOUT = 10.0
"""Seconds a connection has to send a request's headers (from its opening, or from a request's first byte)."""
DEFAULT_KEEP_ALIVE = 75
"""Seconds an idle connection is kept: longer than nginx's and AWS ALB's 60 s, so the proxy closes first."""
DEFAULT_STREAMS_PER_CLIENT = 32
"""Streams one client address may hold: the UI needs two, a browser opens at most six per host over HTTP/1.1."""
DEFAULT_STREAMS_PER_SPACE = 256
"""Streams one space may hold (in dev mode: the whole server)."""
