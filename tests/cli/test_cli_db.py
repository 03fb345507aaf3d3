from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Forest, Run, run_process, session_ids

from stellate.cli.exit_codes import EXIT_STATUS
from stellate.store.sqlite import MIGRATIONS


def test_db_path_follows_flag_then_env_then_default(cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("db", "path").out.strip() == str(tmp_path / "stellate.db")
    monkeypatch.setenv("STELLATE_DB", str(tmp_path / "env.db"))
    assert cli("db", "path").out.strip() == str(tmp_path / "env.db")
    assert cli("db", "path", "--db", "flag.db").out.strip() == str(tmp_path / "flag.db")
    assert cli("--db", "top.db", "db", "path").out.strip() == str(tmp_path / "top.db")


def test_migrate_creates_then_reports_up_to_date(cli: Run, db: Path) -> None:
    created = cli("db", "migrate")
    assert created.status == 0 and "created" in created.out and db.exists()
    again = cli("db", "migrate")
    assert again.status == 0 and "up to date" in again.out


def _schema_zero(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE stellate_schema (version INTEGER NOT NULL)")
        conn.execute("CREATE TABLE unrelated (x INTEGER)")


def test_a_database_behind_the_schema_waits_for_migrate(cli: Run, db: Path) -> None:
    _schema_zero(db)
    refused = cli("sessions", "tree")
    assert refused.status == EXIT_STATUS["schema_behind"] and "stellate db migrate" in refused.err
    migrated = cli("db", "migrate")
    assert migrated.status == 0 and f"migrated {db} to schema {len(MIGRATIONS)}" in migrated.out
    assert cli("sessions", "tree").status == 0


def test_a_database_from_a_newer_stellate_is_refused_and_left_alone(cli: Run, forest: Forest, db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO stellate_schema (version) VALUES (?)", (len(MIGRATIONS) + 1,))
    content = db.read_bytes()
    for argv in (("sessions", "tree"), ("sessions", "fork", forest.root, "--label", "X"), ("db", "migrate")):
        result = cli(*argv)
        assert result.status == EXIT_STATUS["schema_too_new"], argv
        assert result.err.count("\n") == 1 and "[schema_too_new]" in result.err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone() == (2,)
    assert len(db.read_bytes()) == len(content)


def test_a_database_locked_by_another_process_is_refused_and_nothing_written(forest: Forest, db: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"conn = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "conn.execute('BEGIN IMMEDIATE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = run_process("sessions", "fork", forest.root, "--label", "X")
    finally:
        holder.communicate("done\n", timeout=10)
    assert result.status == EXIT_STATUS["store_locked"]
    assert result.err.count("\n") == 1 and "[store_locked]" in result.err
    assert len(session_ids(db)) == 2


@pytest.mark.parametrize("url", ["postgresql:/bad", "postgres:bad", "sqlite:/x.db"])
def test_a_store_url_missing_its_slashes_is_refused_not_taken_as_a_file(
    cli: Run, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for result in (cli("--db", url, "db", "path"), cli("--db", url, "db", "migrate")):
        assert result.status == EXIT_STATUS["usage_error"] and "is not a store URL" in result.err, result.err
    monkeypatch.setenv("STELLATE_DB", url)
    assert cli("sessions", "tree").status == EXIT_STATUS["usage_error"]
    assert list(tmp_path.glob("*:*")) == [] and not list(tmp_path.rglob("*.db"))


@pytest.fixture
def missing_pg_database(pg_url: str) -> Iterator[str]:
    """The URL of a PostgreSQL database that does not exist yet (dropped afterwards if created)."""
    import psycopg
    from psycopg import sql

    name = f"stellate_cli_{uuid.uuid4().hex[:12]}"
    yield pg_url.split("?", 1)[0].rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.mark.postgres
def test_migrate_creates_a_missing_postgresql_database_and_only_migrate_does(
    cli: Run, missing_pg_database: str
) -> None:
    name = missing_pg_database.rsplit("/", 1)[1]
    read = cli("--db", missing_pg_database, "sessions", "tree")
    assert read.status == EXIT_STATUS["store_not_found"]
    assert f'no database "{name}"' in read.err and "`stellate db migrate` creates it" in read.err
    created = cli("--db", missing_pg_database, "db", "migrate")
    assert created.status == 0, created.err
    assert f'created database "{name}"' in created.out
    again = cli("--db", missing_pg_database, "db", "migrate")
    assert again.status == 0 and "is up to date" in again.out


@pytest.mark.postgres
def test_a_user_who_may_not_create_databases_is_told_what_to_ask_for(
    cli: Run, pg_url: str, missing_pg_database: str
) -> None:
    import psycopg
    from psycopg import sql

    role = f"stellate_nocreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOCREATEDB").format(sql.Identifier(role)))
    try:
        url = missing_pg_database.replace("postgres@", f"{role}@", 1)
        result = cli("--db", url, "db", "migrate")
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    assert result.status == EXIT_STATUS["store_error"]
    assert "may not create databases" in result.err and "CREATE DATABASE" in result.err


def test_listing_a_database_behind_the_schema_also_waits_for_migrate(cli: Run, db: Path) -> None:
    _schema_zero(db)
    refused = cli("sessions", "list")
    assert refused.status == EXIT_STATUS["schema_behind"] and "stellate db migrate" in refused.err
