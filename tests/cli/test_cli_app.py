from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from cli_support import Run, run_process

from stellate import __version__
from stellate.cli.exit_codes import EXIT_STATUS


def test_version_and_help_exit_zero(cli: Run) -> None:
    assert cli("--help").status == 0
    result = cli("--version")
    assert result.status == 0 and __version__ in result.out


def test_an_unknown_command_is_one_line_with_the_usage_status(cli: Run) -> None:
    result = cli("fly")
    assert result.status == 2
    assert result.err.count("\n") == 1 and "[usage_error]" in result.err


def test_a_missing_argument_is_a_usage_error(cli: Run) -> None:
    result = cli("sessions", "fork", "s-1")
    assert result.status == 2 and "--label" in result.err


def test_python_dash_m_runs_the_command() -> None:
    result = run_process("--version")
    assert result.status == 0 and f"stellate {__version__}" in result.out


def test_the_entry_point_is_declared() -> None:
    [script] = [e for e in entry_points(group="console_scripts") if e.name == "stellate"]
    assert script.value == "stellate.cli:main"


@pytest.mark.parametrize("module", ["rich", "prompt_toolkit"])
def test_without_its_terminal_libraries_the_command_names_the_extra_to_install(module: str) -> None:
    code = f"import sys; sys.modules[{module!r}] = None; from stellate.cli import main; sys.exit(main(['db', 'path']))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 78
    assert 'pip install "stellate[cli]"' in done.stderr and done.stderr.count("\n") == 1


def test_no_command_shows_the_usage_and_the_commands(cli: Run) -> None:
    result = cli()
    assert result.status == 2
    assert result.err.startswith("usage: stellate") and "stellate: stellate" not in result.err
    for command in ("demo", "chat", "sessions", "db"):
        assert f"\n    {command} " in result.err


def test_a_command_without_its_action_lists_the_actions(cli: Run) -> None:
    result = cli("sessions")
    assert result.status == 2 and result.err.startswith("usage: stellate sessions")
    assert "\n    tree " in result.err and "\n    show " in result.err


def test_a_postgresql_url_without_the_extra_names_it_and_exits_78() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None; from stellate.cli import main;"
        " sys.exit(main(['--db', 'postgresql://postgres@127.0.0.1:5432/test', 'sessions', 'tree']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 78, done.stderr
    assert 'pip install "stellate[postgres]"' in done.stderr and "[missing_extra]" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [("sessions", "tree"), ("sessions", "list"), ("db", "path"), ("keys", "list")])
def test_a_named_config_file_that_is_missing_is_refused_by_every_command(
    cli: Run, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/cli.md: a named file must exist, whether or not the command needs a setting from it."""
    flagged = cli(*command, "--config", "missing.toml")
    assert flagged.status == EXIT_STATUS["config_invalid"] and "missing.toml does not exist" in flagged.err
    monkeypatch.setenv("STELLATE_CONFIG", "missing.toml")
    assert cli(*command).status == EXIT_STATUS["config_invalid"]
