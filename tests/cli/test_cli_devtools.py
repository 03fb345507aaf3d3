from __future__ import annotations

import anyio

from stellate.cli.devtools import serve_and_open, ui_url


class FakeServer:
    def __init__(self, *, starts: bool) -> None:
        self.started = False
        self.starts = starts

    async def serve(self) -> None:
        await anyio.sleep(0.05)
        self.started = self.starts
        await anyio.sleep(0.2)


def test_the_ui_address_of_an_any_address_bind_is_loopback() -> None:
    assert ui_url("0.0.0.0", 8700) == "http://127.0.0.1:8700/"
    assert ui_url("127.0.0.1", 9000) == "http://127.0.0.1:9000/"
    assert ui_url("::1", 8700) == "http://[::1]:8700/"


async def test_open_waits_until_the_server_listens() -> None:
    opened: list[tuple[str, bool]] = []
    server = FakeServer(starts=True)
    await serve_and_open(server, "http://127.0.0.1:8700/", lambda url: opened.append((url, server.started)))
    assert opened == [("http://127.0.0.1:8700/", True)]


async def test_nothing_opens_when_the_server_never_listens_or_without_open() -> None:
    opened: list[str] = []
    with anyio.fail_after(5):
        await serve_and_open(FakeServer(starts=False), "http://127.0.0.1:8700/", opened.append)
        await serve_and_open(FakeServer(starts=True), None, opened.append)
    assert opened == []
