"""A paced, stamped OpenAI-compatible model in a process of its own (B10-peer: streaming capacity, issue 22).

``python -m bench.paced_mock CHUNKS RATE`` prints ``PORT <n>`` and answers every
``POST /v1/chat/completions`` with a streamed reply of CHUNKS text chunks, RATE per second. Each chunk's text is
the wall-clock time (ms) at which it was written to the socket, followed by ``;``: a client that finds the
stamps in what its server relays knows each chunk's added delay (server receive to client receive, plus one
loopback hop). Non-streamed requests get the whole reply at once. It stops when its standard input closes.

Only asyncio: HTTP/1.1 with keep-alive, ``Content-Length`` request bodies, chunked SSE answers. One timer per
answer drives its chunks, so the mock's own cost stays small beside the servers it feeds.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bench.mock_server import port_process

_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


def _frame(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _chunk(text: str | None, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    delta = {} if text is None else {"content": text}
    body: dict[str, object] = {
        "id": "paced",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "paced",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if usage is None else [],
    }
    if usage is not None:
        body["usage"] = usage
    return _frame(b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n")


class PacedModel:
    """Serves paced, stamped answers; see the module's docstring."""

    def __init__(self, chunks: int, rate: float) -> None:
        self.chunks, self.interval = chunks, 1 / rate

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                if body.get("stream"):
                    await self._stream(writer)
                else:
                    await self._whole(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _stream(self, writer: asyncio.StreamWriter) -> None:
        writer.write(_HEAD + _chunk(""))
        loop = asyncio.get_running_loop()
        start = loop.time()
        for n in range(self.chunks):
            await asyncio.sleep(max(0.0, start + n * self.interval - loop.time()))
            writer.write(_chunk(f"{time.time() * 1000:.3f};"))
            await writer.drain()
        usage = {"prompt_tokens": 10, "completion_tokens": self.chunks, "total_tokens": 10 + self.chunks}
        writer.write(_chunk(None, "stop") + _chunk(None, usage=usage) + _frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()

    async def _whole(self, writer: asyncio.StreamWriter) -> None:
        text = "".join(f"{time.time() * 1000:.3f};" for _ in range(self.chunks))
        body = {
            "id": "paced",
            "object": "chat.completion",
            "created": 0,
            "model": "paced",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": self.chunks, "total_tokens": 10 + self.chunks},
        }
        payload = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(payload))
        writer.write(payload)
        await writer.drain()


async def _serve(chunks: int, rate: float) -> None:
    server = await asyncio.start_server(PacedModel(chunks, rate).handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it


@contextmanager
def paced_mock_process(chunks: int, rate: float) -> Iterator[tuple[str, int]]:
    """Start the paced mock in a child process; yields its base URL (``http://127.0.0.1:PORT``) and pid."""
    with port_process([sys.executable, "-m", "bench.paced_mock", str(chunks), str(rate)], "the paced mock") as child:
        yield child


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), float(sys.argv[2])))
