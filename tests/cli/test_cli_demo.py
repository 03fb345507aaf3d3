from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Run, session_ids

from stellate.cli import demo

EXAMPLE = Path(__file__).parents[2] / "examples" / "study_abroad.py"


def test_demo_grows_a_tree_and_shows_an_insight_consumed(cli: Run, db: Path) -> None:
    result = cli("demo")
    assert result.status == 0, result.err
    out = result.out
    assert 'create_session({"label": "Europe", "profile": "region-expert"' in out  # the model forks itself
    assert "insight → Budget" in out
    assert "<insight>" in out and "insight consumed (pending insight: none)" in out
    tree = out.split("The tree this run grew", 1)[1]
    for label in ("Study abroad plan", "Europe", "North America", "Budget"):
        assert label in tree
    assert "memory: Germany: no tuition" in tree and "Session digests" in tree
    assert len(session_ids(db)) == 4
    assert "see it on the star map: stellate serve --open" in out


def test_without_the_server_extra_the_closing_hint_names_the_install(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """README step 1 installs only ``[cli]``: the star-map hint then says what `stellate serve` needs first."""
    monkeypatch.setattr(demo, "_SERVER_MODULES", ("stellate_no_such_module",))
    result = cli("demo")
    assert result.status == 0, result.err
    assert 'see it on the star map: pip install "stellate[server]" and run stellate serve --open,' in result.out


def test_running_the_demo_twice_adds_a_second_tree(cli: Run, db: Path) -> None:
    assert cli("demo").status == 0
    second = cli("demo", "--db", str(db))
    assert second.status == 0 and f"stellate serve --db {db} --open" in second.out
    tree = cli("sessions", "tree").out
    assert tree.count("Study abroad plan") == 2 and len(session_ids(db)) == 8


def test_the_example_runs_offline() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert "Send-off poem" in done.stdout and "insight consumed by Budget: True" in done.stdout
    assert "Pack light" in done.stdout
