"""``stellate serve`` and ``stellate keys``: keys printed once and stored hashed, a real server, its refusals."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from cli_support import Run, run_process

from stellate.cli.exit_codes import EXIT_STATUS


def test_keys_are_printed_once_stored_hashed_listed_and_revoked(cli: Run, db: Path) -> None:
    created = cli("keys", "create", "--space", "team-a", "--read-only")
    assert created.status == 0
    key = created.out.strip()
    assert key.startswith("stl_") and "read-only" in created.err and "team-a" in created.err
    stored = Path(f"{db}.keys.json").read_text()
    assert key not in stored and json.loads(stored)["keys"][0]["space"] == "team-a"
    [key_id] = [k["id"] for k in json.loads(stored)["keys"]]
    listed = cli("keys", "list")
    assert key_id in listed.out and "team-a" in listed.out and key not in listed.out
    assert cli("keys", "revoke", key_id).status == 0
    assert json.loads(Path(f"{db}.keys.json").read_text())["keys"][0]["revoked_at"] is not None
    assert cli("keys", "revoke", "k-nope").status == EXIT_STATUS["key_not_found"]
    assert cli("keys", "create", "--space", "no spaces").status == EXIT_STATUS["usage_error"]


def test_serve_refuses_to_listen_beyond_loopback_without_keys(cli: Run, db: Path) -> None:
    refused = cli("serve", "--host", "0.0.0.0")
    assert refused.status == EXIT_STATUS["keys_required"] and "keys_required" in refused.err
    assert not db.exists()


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(tmp_path: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``stellate serve`` in a child process (a scripted model), stopped with SIGTERM afterwards."""
    port = _port()
    env = {**os.environ, "STELLATE_PROVIDER": "scripted"}
    child = subprocess.Popen(
        [sys.executable, "-m", "stellate.cli", "serve", "--port", str(port), "--grace", "1", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield url, child
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        try:
            child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()


def test_serve_answers_in_dev_mode_and_stops_on_sigterm(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, child):
        sid = httpx.post(f"{url}/sessions", json={"label": "cli"}).json()["id"]
        reply = httpx.post(f"{url}/sessions/{sid}/turns", json={"content": "hello"}, timeout=30).json()
        assert reply["content"] == "(scripted) you said: hello"
        assert httpx.get(f"{url}/info").json()["auth"] == "none"
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=20)
        # uvicorn shuts down gracefully, then lets the signal end the process as it would have.
        assert child.returncode in (0, -signal.SIGTERM)
        line = out
        assert f"stellate serve: {url.removesuffix('/v1')}" in line and "dev mode, one 'default' space" in line
    assert (tmp_path / "stellate.db").exists()


def test_serve_with_keys_opens_only_the_keys_space(cli: Run, tmp_path: Path) -> None:
    key = cli("keys", "create", "--space", "team-a").out.strip()
    with serving(tmp_path) as (url, _):
        assert httpx.get(f"{url}/sessions").status_code == 401
        info = httpx.get(f"{url}/info", headers={"Authorization": f"Bearer {key}"}).json()
        assert (info["space"], info["auth"]) == ("team-a", "keys")


def test_serve_on_a_port_in_use_is_one_line_and_its_exit_status(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = run_process("serve", "--port", port, "--db", str(tmp_path / "s.db"))
    assert done.status == EXIT_STATUS["port_in_use"] == 69
    assert done.err.count("\n") == 1 and "[port_in_use]" in done.err and port in done.err
    assert done.out == ""  # no banner: nothing listens
    assert not (tmp_path / "s.db").exists()


def test_serve_on_a_port_that_is_none_is_one_line_and_its_exit_status(tmp_path: Path) -> None:
    done = run_process("serve", "--port", "99999", "--db", str(tmp_path / "s.db"))
    assert done.status == EXIT_STATUS["invalid_address"] == 2
    assert done.err.count("\n") == 1 and "[invalid_address]" in done.err and done.out == ""


def test_serve_with_keys_on_an_address_of_no_interface_is_one_line(cli: Run, tmp_path: Path) -> None:
    cli("keys", "create", "--space", "team-a")
    done = run_process("serve", "--host", "192.0.2.1", "--db", str(tmp_path / "stellate.db"))  # TEST-NET-1
    assert done.status == EXIT_STATUS["invalid_address"] and "[invalid_address]" in done.err
    assert done.err.count("\n") == 1


def test_serve_refuses_a_rebound_host_and_a_cross_origin_form(tmp_path: Path) -> None:
    with serving(tmp_path) as (url, _):
        rebound = httpx.post(f"{url}/sessions", json={"label": "x"}, headers={"Host": "attacker.example"})
        assert rebound.status_code == 421 and rebound.json()["code"] == "host_not_allowed"
        form = httpx.post(f"{url}/sessions", data={"label": "x"}, headers={"Origin": "http://attacker.example"})
        assert form.status_code == 403 and form.json()["code"] == "origin_not_allowed"
        assert httpx.get(f"{url}/sessions").json()["items"] == []
