"""Every Python example in README.md and docs/*.md runs and prints what its ``#>`` lines say."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

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
