"""A command imports only what it runs: ``--help`` no command module, ``sessions list`` no agent (issue 22)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stellate.cli.app import build_parser

HEAVY = ("stellate.agent", "stellate.engine", "stellate.llm", "tiktoken", "prompt_toolkit", "pydantic.main")


def _imported_by(argv: list[str], cwd: Path) -> list[str]:
    code = (
        "import json, sys; from stellate.cli import main; status = main(sys.argv[1:]);"
        f" print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=cwd, timeout=60, check=True
    )
    imported: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return imported


def test_the_help_lists_the_same_commands_whichever_modules_are_loaded() -> None:
    assert build_parser([]).format_help() == build_parser().format_help()


def test_a_named_command_is_built_in_full() -> None:
    lazy = build_parser(["sessions", "list"])
    assert lazy.parse_args(["sessions", "list", "--limit", "3"]).limit == 3


def test_help_imports_no_command(tmp_path: Path) -> None:
    assert _imported_by(["--help"], tmp_path) == []


def test_sessions_list_reads_the_store_without_the_agent(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "stellate.cli", "--db", str(tmp_path / "s.db"), "db", "migrate"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert _imported_by(["--db", str(tmp_path / "s.db"), "sessions", "list"], tmp_path) == []


def test_piped_sessions_list_of_a_sqlite_file_needs_no_asyncio_store_machinery_or_rich(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    subprocess.run(
        [sys.executable, "-m", "stellate.cli", "--db", str(db), "db", "migrate"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    code = (
        "import json, sys; from stellate.cli import main; status = main(sys.argv[1:]);"
        " print(json.dumps([m for m in ('asyncio', 'stellate.store.base', 'rich', 'stellate.log.transcript')"
        " if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--db", str(db), "sessions", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    assert "no session matches" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
