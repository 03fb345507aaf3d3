"""The loopback mock provider in a process of its own: ``python -m bench.mock_server`` prints ``PORT <n>``.

End-to-end cases (B8) talk to it over real HTTP; running it in another process keeps its CPU time (parsing
every request body) out of the client's measured CPU. It answers "ok" to every request, streamed or not, and
stops when its standard input closes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest


def _answer(request: MockRequest) -> MockReply:
    return MockReply(text="ok", input_tokens=12, output_tokens=1)


async def _serve() -> None:
    async with MockLLMServer(handler=_answer) as server:
        print(f"PORT {server.url.rsplit(':', 1)[1]}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it


@contextmanager
def mock_server_process() -> Iterator[str]:
    """Start the mock in a child process; yields its base URL (``http://127.0.0.1:PORT``)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.mock_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the mock server did not start: {line!r}")
        yield f"http://127.0.0.1:{line.split()[1]}"
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


if __name__ == "__main__":
    asyncio.run(_serve())
