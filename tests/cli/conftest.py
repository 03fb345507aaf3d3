"""Fixtures for the command: an isolated environment, an in-process runner, and a small forest on disk."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

import pytest
from cli_support import KEY_VARS, Forest, Result, Run

from stellate import Agent
from stellate.cli import main
from stellate.llm import ScriptedLLM


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user config, keys or database leak in: HOME, the working directory and the state dir are temporary."""
    for name in list(os.environ):
        if name.startswith("STELLATE_") or name in KEY_VARS:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("STELLATE_LOCK_TIMEOUT", "0.3")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The default database of the isolated working directory."""
    return tmp_path / "stellate.db"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run ``stellate ARGS`` in this process, with ``stdin`` as its standard input."""

    def run(*argv: str, stdin: str = "") -> Result:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main(list(argv))
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture
def forest(db: Path) -> Forest:
    """A root with two turns and a child forked (inherit) from it with one turn of its own."""

    async def build() -> Forest:
        async with Agent(f"sqlite:///{db}", llm=ScriptedLLM(default="ok")) as agent:
            root = await agent.create_session(label="Root")
            await agent.turn(root.id, "one")
            await agent.turn(root.id, "two")
            child = await agent.fork_session(root.id, label="Child", context="inherit")
            await agent.turn(child.id, "three")
            return Forest(root=root.id, child=child.id)

    return asyncio.run(build())
