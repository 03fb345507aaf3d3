"""docs/deploy.md's "Try it on one machine" runs as written: two workers on one PostgreSQL, any serves any session.

The only changes: the database URL points at the test's own schema, and the ports are free ones.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "deploy.md"
pytestmark = pytest.mark.postgres


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tried_script() -> str:
    text = DOC.read_text()
    section = text.split("## Try it on one machine", 1)[1]
    found = re.search(r"```bash\n(.*?)```", section, re.S)
    assert found is not None, "the section has its bash block"
    return found.group(1)


def test_two_workers_as_the_deploy_doc_shows(pg_url: str, pg_schema: str, tmp_path: Path) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
    url = f"{pg_url}?options=-csearch_path%3D{pg_schema}"
    script = tried_script()
    script = re.sub(r'export STELLATE_DB="[^"]*"', f'export STELLATE_DB="{url}"', script)
    for port in ("8701", "8702"):
        script = script.replace(port, str(free_port()))
    env = {**os.environ, "HOME": str(tmp_path)}
    done = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('{"status":"ok"}') >= 2
    assert '"label":"Shared"' in done.stdout
