"""The devtools web UI from the command line: its address, and a browser opened once the server listens."""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from typing import Protocol

import anyio

__all__ = ["serve_and_open", "ui_url"]

_ANY_ADDRESS = {"0.0.0.0", "::", ""}


class _Server(Protocol):
    started: bool

    async def serve(self) -> None: ...


def ui_url(host: str, port: int) -> str:
    """Where a browser on this machine finds the UI of a server bound to ``host`` (any-address → loopback)."""
    shown = "127.0.0.1" if host in _ANY_ADDRESS else host
    return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}/"


async def serve_and_open(server: _Server, url: str | None, opener: Callable[[str], object] = webbrowser.open) -> None:
    """Run ``server`` until it stops; with ``url``, open it in a browser as soon as the server listens."""
    async with anyio.create_task_group() as group:
        if url is not None:
            group.start_soon(_open_when_listening, server, url, opener)
        await server.serve()
        group.cancel_scope.cancel()  # the server stopped before it ever listened: nothing to open


async def _open_when_listening(server: _Server, url: str, opener: Callable[[str], object]) -> None:
    while not server.started:
        await anyio.sleep(0.05)
    await anyio.to_thread.run_sync(opener, url)
