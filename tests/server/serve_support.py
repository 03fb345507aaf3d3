"""Real ``stellate serve`` processes for tests, a throwaway PostgreSQL cluster they can lose, and an SSE reader.

The cluster is the test's own (``initdb`` and ``pg_ctl`` from ``pg_config --bindir``, a temp directory, a free
port), so a test may stop and restart it; the shared test server is never touched. Run as root, ``initdb``
refuses, so the cluster then belongs to the ``postgres`` OS user.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import sse


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def schema_url(pg_url: str, schema: str) -> str:
    """A new PostgreSQL schema, chosen with libpq's search_path option as a deployment would."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return f"{pg_url}?options=-csearch_path%3D{schema}"


@dataclass
class Worker:
    """One ``stellate serve`` process."""

    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()

    def kill(self) -> None:
        """End the worker at once (SIGKILL), as a crash would."""
        self.process.kill()
        self.process.wait()

    def errors(self) -> str:
        """What the worker wrote on stderr (once stopped)."""
        return self.process.stderr.read().decode() if self.process.stderr else ""


async def start_worker(db_url: str, model_url: str, home: Path, *extra: str) -> Worker:
    """``stellate serve`` on a free port of loopback, over ``db_url``, once it answers ``/v1/health``."""
    port = free_port()
    env = {**os.environ, "HOME": str(home), "OPENAI_API_KEY": "test", "STELLATE_LEASE_TTL": "2"}
    env["STELLATE_BUSY_TIMEOUT"] = "60"
    command = [sys.executable, "-m", "stellate.cli", "serve", "--db", db_url, "--port", str(port)]
    command += ["--provider", "openai", "--base-url", model_url, "--model", "mock", *extra]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    worker = Worker(process, f"http://127.0.0.1:{port}")
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            if process.poll() is not None:
                raise AssertionError(f"worker exited: {worker.errors()}")
            try:
                if (await client.get(f"{worker.url}/v1/health")).status_code == 200:
                    return worker
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    worker.stop()
    raise AssertionError("worker never became healthy")


@dataclass
class Cluster:
    """A PostgreSQL cluster of the test's own."""

    bindir: Path
    data: Path
    port: int
    as_postgres: Sequence[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.data.parent} -c listen_addresses=127.0.0.1 -c fsync=off"
        command = [*self.as_postgres, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-t", "30"]
        subprocess.run([*command, "-o", options, "-l", str(self.data.parent / "log"), *args], check=True, timeout=40)

    def stop(self) -> None:
        self.ctl("stop", "-m", "fast")

    def start(self) -> None:
        self.ctl("start")

    def restart(self) -> None:
        self.ctl("restart", "-m", "fast")


def _unavailable(reason: str) -> None:
    """Skip a test that needs PostgreSQL's own programs, except under ``CI=true``, where it fails."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must provide PostgreSQL's programs: {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A started cluster in a fresh directory, stopped and removed afterwards (skipped without PostgreSQL's programs).

    The directory is under the system's temp dir, not pytest's (whose 0700 parents the postgres user cannot enter).
    """
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        _unavailable("pg_config is not installed")
    assert pg_config is not None
    bindir = Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True).stdout.strip())
    if not (bindir / "initdb").exists():
        _unavailable(f"initdb is not in {bindir}")
    base = Path(tempfile.mkdtemp(prefix="stellate-pg-"))
    as_postgres: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to the postgres user
        shutil.chown(base, "postgres", "postgres")
        as_postgres = ["runuser", "-u", "postgres", "--"]
    data = base / "data"
    initdb = [*as_postgres, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
    try:
        subprocess.run([*initdb, "--no-sync"], check=True, capture_output=True, timeout=60)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    cluster = Cluster(bindir=bindir, data=data, port=free_port(), as_postgres=as_postgres)
    try:
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


async def read_sse(response: httpx.Response, into: list[tuple[str, str | None, dict[str, Any]]]) -> None:
    """Collect ``(event, id, data)`` of each server-sent event until the stream ends (which fails the caller)."""
    async for item in sse(response):
        into.append(item)
