"""``/edit`` and ``/regenerate`` in ``stellate chat``; ``stellate sessions replay`` and ``compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Forest, Run, events_of

from stellate.cli.exit_codes import EXIT_STATUS


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "script.json"
    script.write_text("[]")
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_SCRIPT", str(script))
    return script


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def _sessions(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("session ")]


def test_edit_runs_the_turn_again_in_a_branch_and_continues_there(cli: Run, scripted: Path, db: Path) -> None:
    """``/edit 1 TEXT`` switches to a new branch holding the edited turn; the first session keeps its turn."""
    scripted.write_text(json.dumps(["first answer", "second answer"]))
    result = cli("chat", stdin=_lines("hello", "/edit 1 hello again, differently", "/quit"))
    assert result.status == 0, result.err
    root, branch = _sessions(result.out)
    assert "· edit 1" in result.out and "assistant › second answer" in result.out
    users = [data for _, kind, data in events_of(db, branch) if kind == "user/message"]
    assert users == [{"content": "hello again, differently"}]
    assert [data for _, kind, data in events_of(db, root) if kind == "user/message"] == [{"content": "hello"}]


def test_regenerate_reruns_the_last_turn_and_bad_input_is_reported(cli: Run, scripted: Path, db: Path) -> None:
    """``/regenerate`` reuses the last message; ``/edit`` without a number or text says how to call it."""
    scripted.write_text(json.dumps(["one", "two", "two again"]))
    result = cli("chat", stdin=_lines("q1", "q2", "/edit x y", "/edit 2", "/regenerate", "/quit"))
    assert result.status == 0, result.err
    assert result.err.count("/edit needs") == 2
    _, branch = _sessions(result.out)
    assert "assistant › two again" in result.out
    users = [data["content"] for _, kind, data in events_of(db, branch) if kind == "user/message"]  # type: ignore[index]
    assert users == ["q1", "q2"]


def test_replay_streams_each_turn_into_a_new_branch(cli: Run, scripted: Path, forest: Forest, db: Path) -> None:
    """``sessions replay`` runs the messages from the turn on with the chosen model, then says how to compare."""
    result = cli("sessions", "replay", forest.child, "--from-turn", "2", "--model", "m2")
    assert result.status == 0, result.err
    assert "turn 2 (1 of 2) › two" in result.out and "turn 3 (2 of 2) › three" in result.out
    assert "(scripted) you said: three" in result.out and "· replay 2 (m2)" in result.out
    branch = result.out.split("replayed into ")[1].split()[0]
    models = [data["model"] for _, kind, data in events_of(db, branch) if kind == "assistant/message"]  # type: ignore[index]
    assert models[-2:] == ["m2", "m2"]
    compared = cli("sessions", "compare", forest.child, branch)
    assert compared.status == 0, compared.err
    assert f"common ancestor: {forest.child}" in compared.out and "1 shared turn(s)" in compared.out


def test_replay_of_a_turn_that_does_not_exist_is_a_usage_error(cli: Run, scripted: Path, forest: Forest) -> None:
    """A turn past the end fails with the usage status and creates nothing."""
    result = cli("sessions", "replay", forest.root, "--from-turn", "9")
    assert result.status == EXIT_STATUS["usage_error"] and "turns 1..2" in result.err
