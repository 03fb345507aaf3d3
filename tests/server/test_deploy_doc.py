"""docs/deploy.md's "Try it on one machine" runs as written: two workers on one PostgreSQL, any serves any session.

The only changes: the database is one of the test's own (which does not exist yet, so ``stellate db migrate``
creates it as on a fresh server), and the ports are free ones.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from doc_blocks import blocks_run_by

pytestmark = pytest.mark.postgres


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_free_ports(script: str) -> str:
    for port in ("8701", "8702"):
        script = script.replace(port, str(free_port()))
    return script


@pytest.fixture
def new_database(pg_url: str) -> Iterator[str]:
    """The URL of a database that does not exist yet (dropped after the test if it was created)."""
    import psycopg
    from psycopg import sql

    name = f"stellate_doc_{uuid.uuid4().hex[:12]}"
    yield pg_url.split("?", 1)[0].rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_two_workers_as_the_deploy_doc_shows(new_database: str, tmp_path: Path) -> None:
    [block] = blocks_run_by("test_two_workers_as_the_deploy_doc_shows")
    documented = 'export STELLATE_DB="postgresql://postgres@127.0.0.1:5432/stellate"'
    assert documented in block.code
    script = with_free_ports(block.code.replace(documented, f'export STELLATE_DB="{new_database}"'))
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=100, env=env)
    assert done.returncode == 0, done.stderr
    name = new_database.rsplit("/", 1)[1]
    assert f'created database "{name}"' in done.stdout
    assert done.stdout.count('{"status":"ok"}') >= 2
    assert '"label":"Shared"' in done.stdout


def test_the_wait_gives_up_with_a_message_when_a_worker_never_gets_ready() -> None:
    """The doc's wait for the workers is bounded: nothing listening ends it with a line per worker."""
    [block] = blocks_run_by("test_two_workers_as_the_deploy_doc_shows")
    lines = block.code.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("for port in"))
    end = next(n for n, line in enumerate(lines) if line == "done")
    wait = "\n".join(lines[start : end + 1])
    assert "--retry 30 --retry-delay 1" in wait and "after 30 s" in wait
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", with_free_ports(wait.replace("--retry 30", "--retry 1"))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 30
    assert done.stderr.count("is not ready after 30 s") == 2, done.stderr
