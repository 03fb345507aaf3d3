"""A cap on request bodies: past it the request is refused with 413 before the route reads it."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stellate.server.problems import problem_response

__all__ = ["DEFAULT_MAX_BODY", "BodyLimit"]

DEFAULT_MAX_BODY = 2 * 1024 * 1024
"""Bytes; a turn's message or a slot rarely needs more than a few kilobytes."""


class BodyLimit:
    """ASGI middleware refusing bodies over ``max_bytes`` (by ``Content-Length``, or by counting)."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        # A body without a declared length is read in full first (it is small, by this very limit), so
        # the refusal never depends on how the route reads it.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(
            "request_too_large", f"the request body exceeds {self.max_bytes} bytes", 413, {"limit": self.max_bytes}
        )
        await response(scope, receive, send)
