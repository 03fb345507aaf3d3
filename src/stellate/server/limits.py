"""Caps on request bodies: past the size (413) or the time to send it (408), refused before the route reads it."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stellate.server.defaults import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY
from stellate.server.problems import problem_response

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_MAX_BODY", "UPLOAD_PATH", "BodyLimit", "upload_body_limit"]


class BodyLimit:
    """ASGI middleware refusing bodies over ``max_bytes`` or slower than ``timeout`` seconds.

    Size goes by ``Content-Length``, or by counting; the deadline stops a client that trickles a body from
    holding its connection and a task forever.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = DEFAULT_MAX_BODY,
        timeout: float = DEFAULT_BODY_TIMEOUT,
        upload_bytes: int | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.upload_bytes = upload_bytes
        """The limit of an image upload's body (``POST /v1/blobs``), refused as ``image_too_large``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting its body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = self.upload_bytes is not None and scope.get("path") == UPLOAD_PATH and scope.get("method") == "POST"
        limit = self.upload_bytes if upload and self.upload_bytes is not None else self.max_bytes
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit, upload)
            return
        # The body is read in full first (it is small, by this very limit), so the refusal never depends on
        # how the route reads it.
        # asyncio's deadline, not anyio's cancel scope: a few microseconds instead of tens, on every request.
        try:
            async with asyncio.timeout(self.timeout):
                body = await self._read(receive, limit)
        except TimeoutError:
            await self._too_slow(scope, receive, send)
            return
        if body is None:
            await self._refuse(scope, receive, send, limit, upload)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, limit: int) -> bytes | None:
        """The whole body, or None past ``limit``."""
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > limit:
                return None
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _too_slow(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"the request body did not arrive within {self.timeout:g} seconds"
        headers = {"Connection": "close"}
        response = problem_response("request_timeout", detail, 408, {"timeout": self.timeout}, headers)
        await response(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int, upload: bool) -> None:
        if upload:
            detail = f"the image upload exceeds {limit} bytes (base64 included); send a smaller image"
            response = problem_response("image_too_large", detail, 413, {"limit": limit})
        else:
            detail = f"the request body exceeds {limit} bytes"
            response = problem_response("request_too_large", detail, 413, {"limit": limit})
        await response(scope, receive, send)


UPLOAD_PATH = "/v1/blobs"
"""The route whose body may be as large as an image in base64."""


def upload_body_limit(max_image_bytes: int) -> int:
    """The body limit of an upload of an image of up to ``max_image_bytes``: its base64 and the JSON around it."""
    return (max_image_bytes + 2) // 3 * 4 + 1024
