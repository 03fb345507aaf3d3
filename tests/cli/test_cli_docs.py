from __future__ import annotations

import argparse
import re
from pathlib import Path

from stellate.cli.app import build_parser
from stellate.cli.exit_codes import EXIT_STATUS
from stellate.cli.slash import COMMANDS

DOC = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")


def _documented_statuses() -> dict[str, int]:
    table = DOC.split("## Exit codes", 1)[1]
    found: dict[str, int] = {}
    for status, codes in re.findall(r"^\| (\d+) \|[^|]*\|([^|]*)\|$", table, flags=re.MULTILINE):
        for code in re.findall(r"`([a-z_]+)`", codes):
            found[code] = int(status)
    return found


def test_the_exit_code_table_in_the_docs_is_the_one_in_the_code() -> None:
    assert _documented_statuses() == EXIT_STATUS


def _command_lines(parser: argparse.ArgumentParser, prefix: str) -> list[str]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return [prefix]
    return [line for name, sub in subparsers[0].choices.items() for line in _command_lines(sub, f"{prefix} {name}")]


def test_every_command_and_slash_command_is_documented() -> None:
    lines = _command_lines(build_parser(), "stellate")
    assert "stellate sessions fork" in lines and "stellate db prune" in lines and len(lines) == 22
    for line in lines:
        assert f"`{line}" in DOC, line
    for command in COMMANDS.values():
        assert f"`{command.syntax.split()[0]}" in DOC, command.syntax
