"""``stellate sessions delete`` and ``stellate db prune``: erase after saying what goes, with a prompt on a terminal."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pexpect
import pytest
from cli_support import Forest, Run, read_db, session_ids

from stellate import Agent
from stellate.cli.exit_codes import EXIT_STATUS
from stellate.llm import ScriptedLLM
from stellate.store.sqlite import SqliteStore


def _tombstones(db: Path) -> list[tuple[str, str]]:
    async def stones(store: SqliteStore) -> list[tuple[str, str]]:
        return [(t.id, t.erased_by) for t in await store.list_tombstones()]

    result = read_db(db, stones)
    assert isinstance(result, list)
    return result


def test_delete_without_a_choice_names_the_dependents(cli: Run, forest: Forest) -> None:
    """Deleting a fork source with neither --cascade nor --keep exits has_dependents and erases nothing."""
    result = cli("sessions", "delete", forest.root, "--yes")
    assert result.status == EXIT_STATUS["has_dependents"] == 12
    assert "[has_dependents]" in result.err


def test_delete_keep_leaves_the_fork_reading_its_history(cli: Run, forest: Forest, db: Path) -> None:
    """``--keep --yes`` erases the root, keeps the child whole, and leaves a tombstone by ``cli``."""
    before = cli("sessions", "show", forest.child).out
    result = cli("sessions", "delete", forest.root, "--keep", "--yes")
    assert result.status == 0, result.err
    assert f"erase {forest.root}" in result.out and f"keep  {forest.child}" in result.out
    assert session_ids(db) == [forest.child]
    assert _tombstones(db) == [(forest.root, "cli")]
    after = cli("sessions", "show", forest.child).out
    assert after.count("user/message") == before.count("user/message") == 3


def test_delete_cascade_takes_the_forks(cli: Run, forest: Forest, db: Path) -> None:
    """``--cascade`` erases the forks too."""
    assert cli("sessions", "delete", forest.root, "--cascade", "-y").status == 0
    assert session_ids(db) == []


def test_without_a_terminal_delete_needs_yes(cli: Run, forest: Forest, db: Path) -> None:
    """Piped input is no confirmation: the command refuses (usage_error) and erases nothing."""
    result = cli("sessions", "delete", forest.child, stdin="y\n")
    assert result.status == EXIT_STATUS["usage_error"] and "--yes" in result.err
    assert len(session_ids(db)) == 2


def _spawn_delete(*args: str, timeout: float) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        ["-m", "stellate.cli", "sessions", "delete", *args],
        env=dict(os.environ),
        encoding="utf-8",
        timeout=timeout,
    )


def test_on_a_terminal_delete_asks_first(forest: Forest, db: Path) -> None:
    """On a terminal the command lists what goes and erases only after ``y``; any other answer keeps all."""
    child = _spawn_delete(forest.child, timeout=20)
    child.expect(rf"erase {forest.child}")
    child.expect(r"\[y/N\]")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == EXIT_STATUS["usage_error"] and len(session_ids(db)) == 2
    child = _spawn_delete(forest.child, timeout=20)
    child.expect(r"\[y/N\]")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and session_ids(db) == [forest.root]


def test_prune_dry_run_lists_what_prune_then_erases(cli: Run, db: Path) -> None:
    """``db prune --dry-run`` names the archived sessions past the age; ``db prune`` erases exactly those."""

    async def build() -> tuple[str, str]:
        async with Agent(f"sqlite:///{db}", llm=ScriptedLLM(default="ok"), consolidate_on_archive=False) as agent:
            old = await agent.create_session(label="Old")
            live = await agent.create_session(label="Live")
            await agent.archive_session(old.id)
            await asyncio.sleep(0.05)
            return old.id, live.id

    old, live = asyncio.run(build())
    assert "would erase 0" in cli("db", "prune", "--older-than", "1d", "--dry-run").out
    dry = cli("db", "prune", "--older-than", "0s", "--dry-run")
    assert dry.status == 0 and f"erase {old}" in dry.out and live not in dry.out
    assert len(session_ids(db)) == 2
    done = cli("db", "prune", "--older-than", "0s")
    assert done.status == 0 and done.out.replace("erased", "would erase", 1) == dry.out
    assert session_ids(db) == [live]
    assert _tombstones(db) == [(old, "prune")]


@pytest.mark.parametrize("age", ["30", "1y", "-1d", "d"])
def test_prune_refuses_an_age_without_a_unit(cli: Run, age: str) -> None:
    """An age is a number and a unit (s, m, h, d, w)."""
    result = cli("db", "prune", "--older-than", age)
    assert result.status == EXIT_STATUS["usage_error"]
