"""Image sources (`stellate.agent.images`): bytes, paths and URLs, each checked before a turn writes anything."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from stellate.agent.images import SERVER_IMAGE_POLICY, ImagePolicy, load_image
from stellate.errors import UsageError
from stellate.testing.images import png

RED = png(4, 3)


class ImageHost:
    """A loopback HTTP server answering every GET with ``body`` (``chunked`` hides its length)."""

    def __init__(self, body: bytes, *, status: int = 200, chunked: bool = False, stall: bool = False) -> None:
        self.body, self.status, self.chunked, self.stall = body, status, chunked, stall
        self.url = ""
        self._handlers: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ImageHost:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/cat.png"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in self._handlers:  # a stalled answer still waits: end it before the loop goes
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.append(task)
        try:
            await self._respond(reader, writer)
        finally:
            writer.close()

    async def _respond(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if self.stall:  # answer nothing until the client gives up and hangs up
            await reader.read()
            return
        length = "Transfer-Encoding: chunked" if self.chunked else f"Content-Length: {len(self.body)}"
        writer.write(f"HTTP/1.1 {self.status} X\r\nContent-Type: image/png\r\n{length}\r\n\r\n".encode())
        if self.chunked:
            for start in range(0, len(self.body), 64):
                piece = self.body[start : start + 64]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            writer.write(b"0\r\n\r\n")
        else:
            writer.write(self.body)
        await writer.drain()


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


DEFAULT = ImagePolicy()


async def code_of(source: object, policy: ImagePolicy = DEFAULT) -> str:
    with pytest.raises(UsageError) as caught:
        await load_image(source, policy)  # type: ignore[arg-type]
    return caught.value.code


async def test_bytes_become_a_reference_with_type_size_and_hash() -> None:
    """Bytes are sniffed (PNG here) and measured from the header; the reference keeps the bytes for the call."""
    ref = await load_image(RED, ImagePolicy())
    assert (ref.media_type, ref.width, ref.height, ref.size, ref.data) == ("image/png", 4, 3, len(RED), RED)


async def test_a_path_is_read_and_a_path_outside_the_root_is_refused(tmp_path: Path) -> None:
    """A file under ``read_root`` is read; one outside it (a ``..`` escape too) is ``image_path_refused``."""
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.png").write_bytes(RED)
    (tmp_path / "b.png").write_bytes(RED)
    policy = ImagePolicy(read_root=tmp_path / "ok")
    assert (await load_image(tmp_path / "ok" / "a.png", policy)).data == RED
    assert await code_of(tmp_path / "b.png", policy) == "image_path_refused"
    assert await code_of(str(tmp_path / "ok" / ".." / "b.png"), policy) == "image_path_refused"


async def test_the_server_policy_reads_no_file_and_fetches_no_url(tmp_path: Path) -> None:
    """Under `SERVER_IMAGE_POLICY` only bytes are taken: a path and a URL are refused without being touched."""
    (tmp_path / "a.png").write_bytes(RED)
    assert await code_of(tmp_path / "a.png", SERVER_IMAGE_POLICY) == "image_path_refused"
    async with ImageHost(RED) as host:
        assert await code_of(host.url, SERVER_IMAGE_POLICY) == "image_unreachable"


async def test_a_missing_file_is_an_io_error(tmp_path: Path) -> None:
    """A path that does not exist is ``io_error`` (the message names it)."""
    assert await code_of(tmp_path / "nope.png") == "io_error"


async def test_a_url_is_fetched() -> None:
    """An ``http`` URL is downloaded and checked like bytes."""
    async with ImageHost(RED, chunked=True) as host:
        assert (await load_image(host.url, ImagePolicy())).data == RED


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_url_over_the_limit_is_too_large_declared_or_not(chunked: bool) -> None:
    """The size limit holds whether the server declares the length or streams past it."""
    async with ImageHost(RED + b"\x00" * 4096, chunked=chunked) as host:
        assert await code_of(host.url, ImagePolicy(max_bytes=1024)) == "image_too_large"


async def test_an_unreachable_url_an_error_status_and_a_stall_are_image_unreachable(closed_port: int) -> None:
    """Nothing listening, a 404, or a server slower than ``fetch_timeout``: ``image_unreachable``."""
    assert await code_of(f"http://127.0.0.1:{closed_port}/x.png") == "image_unreachable"
    async with ImageHost(b"gone", status=404) as host:
        assert await code_of(host.url) == "image_unreachable"
    async with ImageHost(RED, stall=True) as host:
        assert await code_of(host.url, ImagePolicy(fetch_timeout=0.2)) == "image_unreachable"


async def test_a_url_that_serves_no_image_is_not_an_image() -> None:
    """The bytes decide, not the Content-Type header: HTML served as image/png is ``not_an_image``."""
    async with ImageHost(b"<html>hello</html>") as host:
        assert await code_of(host.url) == "not_an_image"
