"""The devtools web UI: static files served at ``/`` beside the API, under a strict Content-Security-Policy.

The UI is plain HTML, CSS and JavaScript modules shipped in the package (no build step, nothing fetched from
the internet). Model output is untrusted: the UI builds the DOM from text, and the policy below forbids
inline scripts, remote images and connections to any other origin as a second line of defence.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "UI_DIR", "install_ui"]

# Module scripts load only with a JavaScript type (the page sends nosniff), whatever the host's mime table says.
mimetypes.add_type("text/javascript", ".js")

UI_DIR = Path(__file__).with_name("ui")
"""Where the UI's files live inside the package."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class _UIHeaders:
    """Adds the UI's security headers to the responses of ``/`` and ``/ui/...`` (the API is left alone)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else None
        if path is None or not (path == "/" or path.startswith("/ui/")):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def install_ui(app: FastAPI) -> None:
    """Serve the UI: ``/`` is its page, ``/ui/...`` its scripts, styles and translations."""

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(UI_DIR / "index.html", media_type="text/html")

    app.mount("/ui", StaticFiles(directory=UI_DIR), name="ui")
    app.add_middleware(_UIHeaders)
