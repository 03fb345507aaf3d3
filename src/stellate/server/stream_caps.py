"""Caps on the event streams held open at once: per client address and per space, 429 past either.

An idle stream costs little, but a client that opens thousands of them would hold the server's memory and
file descriptors. A stream route is a GET route whose documented 200 answer is ``text/event-stream`` in the
app's OpenAPI description (so a new one is capped without being listed here); a turn streamed over ``POST``
ends with its turn and is not counted. The refusal is ``429 too_many_streams`` with ``Retry-After``, before
the route runs.
"""

from __future__ import annotations

import collections
import re
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from stellate.server.auth import authenticate
from stellate.server.defaults import DEFAULT_STREAMS_PER_CLIENT, DEFAULT_STREAMS_PER_SPACE
from stellate.server.keys import KeyRing
from stellate.server.problems import ProblemError, problem_response
from stellate.server.spaces import DEFAULT_SPACE

__all__ = [
    "DEFAULT_STREAMS_PER_CLIENT",
    "DEFAULT_STREAMS_PER_SPACE",
    "RETRY_AFTER_STREAMS",
    "StreamCaps",
    "document_stream_caps",
    "stream_paths",
]

RETRY_AFTER_STREAMS = 5
"""Seconds a refused client should wait before it opens a stream again."""


def stream_paths(openapi: dict[str, Any]) -> list[re.Pattern[str]]:
    """Patterns of the paths whose GET answers a never-ending ``text/event-stream`` (from the OpenAPI document)."""
    found = []
    for path, operations in openapi.get("paths", {}).items():
        answer = operations.get("get", {}).get("responses", {}).get("200", {})
        if "text/event-stream" in answer.get("content", {}):
            pattern = "[^/]+".join(re.escape(part) for part in re.split(r"\{[^}]*\}", path))
            found.append(re.compile(f"^{pattern}$"))
    return found


def document_stream_caps(app: FastAPI) -> None:
    """Add the 429 answer to the OpenAPI description of every stream route of ``app``."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        fresh = app.openapi_schema is None
        document = build()
        if fresh:
            for path, operations in document.get("paths", {}).items():
                if any(p.match(path) for p in stream_paths({"paths": {path: operations}})):
                    operations["get"]["responses"]["429"] = _TOO_MANY
        return document

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the description


_TOO_MANY = {
    "description": "too many streams held open by this client or space (see Retry-After)",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


class StreamCaps:
    """ASGI middleware counting the open streams of each client address and space."""

    def __init__(self, app: ASGIApp, *, api: FastAPI, keys: KeyRing | None, per_client: int, per_space: int) -> None:
        self.app = app
        self.api = api
        self._paths: list[re.Pattern[str]] | None = None
        self.keys = keys
        self.limits = {"client": per_client, "space": per_space}
        self.open: collections.Counter[tuple[str, str]] = collections.Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; a stream is counted while it lasts, or refused past a cap."""
        if scope["type"] != "http" or scope.get("method") != "GET" or not self._is_stream(scope):
            await self.app(scope, receive, send)
            return
        holders = self._holders(scope)
        if holders is None:  # no valid key: the route answers 401
            await self.app(scope, receive, send)
            return
        full = next((kind for kind, holder in holders if self.open[(kind, holder)] >= self.limits[kind]), None)
        if full is not None:
            await self._refuse(full, scope, receive, send)
            return
        self._hold(holders)  # no context manager: an open stream would hold its generator (issue 22)
        try:
            await self.app(scope, receive, send)
        finally:
            self._release(holders)

    def _is_stream(self, scope: Scope) -> bool:
        if self._paths is None:  # the routes are all there by the first request
            self._paths = stream_paths(self.api.openapi())
        path = scope.get("path", "")
        return any(p.match(path) for p in self._paths)

    def _holders(self, scope: Scope) -> list[tuple[str, str]] | None:
        """(``client``, address) and (``space``, name), or None when the request has no valid key."""
        client = scope.get("client")
        address = client[0] if client else "unknown"
        try:
            space = authenticate(Request(scope), self.keys).space if self.keys is not None else DEFAULT_SPACE
        except ProblemError:
            return None
        return [("client", address), ("space", space)]

    def _hold(self, holders: list[tuple[str, str]]) -> None:
        for holder in holders:
            self.open[holder] += 1

    def _release(self, holders: list[tuple[str, str]]) -> None:
        for holder in holders:
            self.open[holder] -= 1
            if not self.open[holder]:
                del self.open[holder]  # an address seen once costs nothing afterwards

    async def _refuse(self, kind: str, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.limits[kind]
        details: dict[str, Any] = {"limit": limit, "per": kind}
        detail = f"this {kind} already holds {limit} open streams; close one or retry later"
        headers = {"Retry-After": str(RETRY_AFTER_STREAMS)}
        await problem_response("too_many_streams", detail, 429, details, headers)(scope, receive, send)
