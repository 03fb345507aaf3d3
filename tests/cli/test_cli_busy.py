"""The command beside another process's running turn: reads leave it alone, writes wait or say session_busy."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Forest, Run, events_of

from stellate.cli.exit_codes import EXIT_STATUS

WORKER = str(Path(__file__).parents[1] / "agent" / "lease_worker.py")


@pytest.fixture
def live_turn(db: Path, forest: Forest, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding a turn open on the forest's root, until the test ends."""
    go = tmp_path / "go"
    proc = subprocess.Popen(
        [sys.executable, WORKER, f"sqlite:///{db}", forest.root, "hold", str(go), "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "IN-MODEL"
    yield proc
    go.touch()
    proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def test_a_fork_of_a_busy_session_does_not_wait(
    cli: Run, db: Path, forest: Forest, live_turn: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STELLATE_BUSY_TIMEOUT", "0")
    result = cli("sessions", "fork", forest.root, "--label", "Plan B")
    assert result.status == 0, result.err
    assert any(kind == "session/forked" for _, kind, _ in events_of(db, forest.root))


def test_reading_commands_leave_a_running_turn_alone(
    cli: Run, db: Path, forest: Forest, live_turn: subprocess.Popen[str]
) -> None:
    before = events_of(db, forest.root)
    shown = cli("sessions", "show", forest.root)
    assert shown.status == 0 and "question of the holder" in shown.out
    assert cli("sessions", "tree").status == 0
    assert events_of(db, forest.root) == before


def test_a_write_on_a_busy_session_is_one_line_and_its_own_status(
    cli: Run, db: Path, forest: Forest, live_turn: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STELLATE_BUSY_TIMEOUT", "0")
    before = events_of(db, forest.root)
    result = cli("sessions", "archive", forest.root)
    assert result.status == EXIT_STATUS["session_busy"] == 75
    assert result.err.strip().count("\n") == 0 and "[session_busy]" in result.err
    assert events_of(db, forest.root) == before


def test_busy_timeout_must_be_seconds(cli: Run, forest: Forest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STELLATE_BUSY_TIMEOUT", "soon")
    result = cli("sessions", "archive", forest.root)
    assert result.status == EXIT_STATUS["config_invalid"] and "STELLATE_BUSY_TIMEOUT" in result.err


def test_chat_says_once_that_it_waits_for_another_writer(
    cli: Run, forest: Forest, live_turn: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Who holds the session, since when, how long at most, and that Ctrl-C gives up: one line, then the wait."""
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_BUSY_TIMEOUT", "0.5")
    result = cli("chat", "--session", forest.root, stdin="are you there?\n")
    waiting = [line for line in result.out.splitlines() if line.startswith("(waiting for the turn")]
    assert len(waiting) == 1, result.out
    assert f":{live_turn.pid}:" in waiting[0] and " since " in waiting[0]
    assert "at most 0.5 s" in waiting[0] and "Ctrl-C gives up" in waiting[0]
    assert "[session_busy]" in result.err
