"""The README's tour, run verbatim: its shell lines as a newcomer types them, on a fresh database."""

from __future__ import annotations

import re
import shlex
from importlib.metadata import requires
from pathlib import Path

from cli_support import Result, run_process

from doc_blocks import blocks_run_by

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
SESSION_ID = re.compile(r"s-[0-9a-f]{12}-[0-9a-f]{12}")


def _section(title: str, end: str) -> str:
    return README.split(title, 1)[1].split(end, 1)[0]


def _run_line(line: str) -> Result:
    argv = shlex.split(line)
    assert argv[0] == "stellate", line
    return run_process(*argv[1:])


def _node_lines(tree: str) -> list[str]:
    """The tree's session lines with the ids masked, as ``label ID turns``."""
    return [" ".join(SESSION_ID.sub("ID", line).split()) for line in tree.splitlines() if SESSION_ID.search(line)]


def test_the_readme_tour_runs_verbatim_on_a_fresh_database(tmp_path: Path) -> None:
    install_block, look_inside = blocks_run_by("test_the_readme_tour_runs_verbatim_on_a_fresh_database")
    assert install_block.code in _section("## The two commands", "Install what the tests need")
    assert look_inside.code in _section("**2. Look inside.**", "**3. Talk")
    [install_and_demo] = install_block.commands()
    demo = _run_line(install_and_demo.split("&&", 1)[1])  # the tests' environment is the install
    assert demo.status == 0, demo.err

    step_1 = _section("**1. Grow a forest.**", "**2. Look inside.**")
    shown_tree = step_1.split("```\n", 1)[1].split("```", 1)[0]
    grown = demo.out.split("The tree this run grew", 1)[1].split("Session digests", 1)[0]
    assert _node_lines(shown_tree) == _node_lines(grown)

    results = {line: _run_line(line) for line in look_inside.commands()}
    for line, result in results.items():
        assert result.status == 0, f"{line}: {result.err}"
    by_command = {line.split()[2]: result.out for line, result in results.items()}
    assert "Budget" in by_command["tree"] and "Study abroad plan" in by_command["tree"]
    assert "label          Budget" in by_command["show"] and "own events" in by_command["show"]
    assert re.search(r"forked s-\S+ \(Plan B\) from s-\S+ at seq 9 \(10 events inherited\)", by_command["fork"])
    assert (tmp_path / "budget.jsonl").read_text(encoding="utf-8").count("\n") > 10
    assert "Budget" in by_command["list"] and "North America" not in by_command["list"]


def test_the_tour_names_the_refusal_of_a_fork_inside_a_turn_truly(tmp_path: Path) -> None:
    assert run_process("demo").status == 0
    refused = run_process("sessions", "fork", "Study abroad plan", "--label", "Bad", "--boundary", "4")
    assert "(`[open_turn]`, exit status 4)" in README
    assert refused.status == 4 and "[open_turn]" in refused.err


def test_the_cli_extra_the_readme_installs_brings_everything_chat_needs() -> None:
    cli_extra = {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0] for r in requires("stellate") or [] if "extra == 'cli'" in r}
    assert {"rich", "prompt-toolkit", "httpx"} <= cli_extra
