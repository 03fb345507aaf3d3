"""``stellate chat`` asks about tool calls waiting for approval: y approves, n denies, e edits the arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Run, events_of


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "script.json"
    fork_call = {"name": "create_session", "arguments": {"label": "Visas"}}
    script.write_text(json.dumps([{"text": "Branching.", "tool_calls": [fork_call]}, "Done."]))
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_SCRIPT", str(script))
    monkeypatch.setenv("STELLATE_APPROVE_TOOLS", "create_session")
    return script


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def _session(out: str) -> str:
    return out.split()[1]


def test_y_approves_and_the_turn_goes_on(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("plan visas", "y"))
    assert result.status == 0, result.err
    assert "⏸ create_session" in result.out and "? approve create_session" in result.out
    assert "✓ create_session approved by chat" in result.out and "assistant › Done." in result.out
    assert "new branch 'Visas'" in result.out


def test_n_with_a_reason_denies_and_the_model_reads_it(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("plan visas", "n not now"))
    assert result.status == 0, result.err
    assert "denied by chat" in result.out and "new branch" not in result.out
    results = [d for _, kind, d in events_of(db, _session(result.out)) if kind == "tool/result"]
    assert isinstance(results[0], dict) and results[0]["content"].endswith("Their reason: not now")


def test_e_edits_the_arguments_before_approving(cli: Run, scripted: Path, db: Path) -> None:
    result = cli("chat", stdin=_lines("plan visas", "e", json.dumps({"label": "Permits"})))
    assert result.status == 0, result.err
    assert "new branch 'Permits'" in result.out


def test_an_unanswered_prompt_leaves_the_turn_paused_and_the_next_chat_asks_again(
    cli: Run, scripted: Path, db: Path
) -> None:
    first = cli("chat", stdin=_lines("plan visas"))
    assert first.status == 0, first.err
    assert "the turn stays paused" in first.out
    scripted.write_text(json.dumps(["Done."]))  # the next process's model goes on from the tool result
    second = cli("chat", stdin=_lines("y"))
    assert second.status == 0, second.err
    assert _session(second.out) == _session(first.out)
    assert "? approve create_session" in second.out and "assistant › Done." in second.out
