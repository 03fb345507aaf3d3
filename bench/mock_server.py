"""The loopback mock provider in a process of its own: ``python -m bench.mock_server`` prints ``PORT <n>``.

End-to-end cases (B8) talk to it over real HTTP; running it in another process keeps its CPU time (parsing
every request body) out of the client's measured CPU. It answers "ok" to every request, streamed or not, and
stops when its standard input closes. ``--delay-ms D`` holds every answer's first byte for D milliseconds (B6:
a model that takes its time, so turns overlap).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest


def _answer(delay: float, request: MockRequest) -> MockReply:
    return MockReply(text="ok", input_tokens=12, output_tokens=1, first_byte_delay=delay)


async def _serve(delay_ms: float) -> None:
    async with MockLLMServer(handler=partial(_answer, delay_ms / 1000)) as server:
        print(f"PORT {server.url.rsplit(':', 1)[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it


@contextmanager
def port_process(command: list[str], what: str) -> Iterator[tuple[str, int]]:
    """Run ``command`` (a server that prints ``PORT <n>``, then serves until its stdin closes); yields URL and pid."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{what} did not start: {line!r}")
        yield f"http://127.0.0.1:{line.split()[1]}", child.pid
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


@contextmanager
def mock_server_process(delay_ms: float = 0.0) -> Iterator[str]:
    """Start the mock in a child process; yields its base URL (``http://127.0.0.1:PORT``)."""
    command = [sys.executable, "-m", "bench.mock_server", "--delay-ms", str(delay_ms)]
    with port_process(command, "the mock server") as (url, _):
        yield url


if __name__ == "__main__":
    delay = float(sys.argv[sys.argv.index("--delay-ms") + 1]) if "--delay-ms" in sys.argv else 0.0
    asyncio.run(_serve(delay))
