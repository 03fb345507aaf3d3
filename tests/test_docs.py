"""Every Python example in README.md and docs/*.md runs and prints what its ``#>`` lines say."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import os
import re
import signal
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from doc_blocks import NOT_RUN_MARKER, RUN_BY_MARKER, fences, shell_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
EXAMPLES = [
    pytest.param(code, id=f"{page.name}-{n}")
    for page in PAGES
    if not page.name.startswith("_")
    for n, code in enumerate(FENCE.findall(page.read_text(encoding="utf-8")), start=1)
]


#: Extras whose examples load native model code: they run in a child process, so a crash there fails one test.
NATIVE_EXTRAS = frozenset({"local"})


def _run_in_child(code: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=110, check=False
    )
    if done.returncode < 0:
        pytest.fail(f"the example crashed its process with {signal.Signals(-done.returncode).name}\n{done.stderr}")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_examples_were_found() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("code", EXAMPLES)
def test_example_prints_its_expected_output(
    code: str, tmp_path: Path, require_extra: Callable[[str, str], ModuleType]
) -> None:
    required = re.findall(r"^# requires: (\S+) \((\w+)\)$", code, flags=re.MULTILINE)
    for module, extra in required:
        if extra in NATIVE_EXTRAS:
            if importlib.util.find_spec(module.split(".")[0]) is None:
                require_extra(module, extra)  # skips or fails as for any missing extra
        else:
            require_extra(module, extra)
    expected = [line.removeprefix("#>").removeprefix(" ") for line in code.splitlines() if line.startswith("#>")]
    if any(extra in NATIVE_EXTRAS for _, extra in required):
        assert _run_in_child(code, tmp_path) == expected
        return
    output = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)  # examples that write a database write it here
    try:
        with contextlib.redirect_stdout(output):
            exec(compile(code, "example", "exec"), {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)
    assert output.getvalue().splitlines() == expected


SKIPPED = re.compile(r"^```py test=\"skip\"\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
NOT_RUN = [
    pytest.param(code, id=f"{page.name}-skipped-{n}")
    for page in PAGES
    for n, code in enumerate(SKIPPED.findall(page.read_text(encoding="utf-8")), start=1)
]


@pytest.mark.parametrize("code", NOT_RUN)
def test_an_example_that_cannot_run_here_is_still_valid_python(code: str) -> None:
    compile(code, "example", "exec")  # e.g. no `await` outside a function


def test_user_docs_stand_alone() -> None:
    """The docs never send a reader to files they do not have or to the project's internal numbering."""
    for page in [*PAGES, *sorted((ROOT / "examples").glob("*.py"))]:
        text = page.read_text(encoding="utf-8")
        for needle in ("DESIGN.md", "§", "shared/", "peer-bench", "devtools inspector"):
            assert needle not in text, f"{page.name} mentions {needle!r}"
        cited = re.search(r"\bseed (?:decision|document|\d)|\bseeds/|\bthe seeds?\b", text, flags=re.IGNORECASE)
        assert cited is None, f"{page.name} cites the project's seed documents: {cited.group()!r}"


# -- shell blocks: each one runs in a test, or says why it cannot (tests/doc_blocks.py states the rule) ---------


def test_every_shell_block_is_run_by_a_test_or_says_why_not() -> None:
    blocks = shell_blocks()
    assert len(blocks) >= 19
    unmarked = [
        block.where
        for block in blocks
        if not (RUN_BY_MARKER.match(block.marker or "") or NOT_RUN_MARKER.match(block.marker or ""))
    ]
    assert unmarked == [], (
        "mark each block `<!-- run by tests/PATH.py::test_name -->` (and run it there with blocks_run_by) "
        f"or `<!-- not run: REASON -->`: {unmarked}"
    )


def test_every_run_by_marker_names_a_test_that_fetches_its_block() -> None:
    for block in shell_blocks():
        runner = block.runner()
        if runner is None:
            continue
        path, test = runner
        assert (ROOT / path).is_file(), f"{block.where}: {path} does not exist"
        functions = {
            node.name: node
            for node in ast.walk(ast.parse((ROOT / path).read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        assert test in functions, f"{block.where}: {path} has no {test}"
        calls = [
            node
            for node in ast.walk(functions[test])
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "blocks_run_by"
        ]
        named = [c.args[0].value for c in calls if c.args and isinstance(c.args[0], ast.Constant)]
        assert test in named, f"{block.where}: {test} does not run it (it never calls blocks_run_by({test!r}))"


def test_commands_are_not_hidden_in_fences_without_a_language() -> None:
    """A command block must say it is a shell block, so the rule above applies to it; transcripts start with $."""
    starts = ("stellate ", "pip ", "python -m ", "curl ", "export ")
    hidden = [f.where for f in fences() if not f.info and f.code.lstrip().startswith(starts)]
    assert hidden == []


def _documented_extras() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(pyproject["project"]["optional-dependencies"])


def test_every_documented_install_names_extras_that_exist() -> None:
    """Tests run a block's commands after its pip install; what the install names is checked here."""
    extras = _documented_extras()
    installs = [
        (block.where, command)
        for block in shell_blocks()
        for line in block.commands()
        for command in line.split("&&")
        if "pip install" in command
    ]
    assert len(installs) >= 8
    for where, command in installs:
        named = re.findall(r'"(?:\.|stellate)\[([\w,-]+)\]"', command)
        assert named, f"{where}: {command!r} installs no extra of stellate"
        unknown = {extra for group in named for extra in group.split(",")} - extras
        assert unknown == set(), f"{where}: {command!r} names extras that do not exist: {sorted(unknown)}"
