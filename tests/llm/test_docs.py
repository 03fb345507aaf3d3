"""Every Python example in docs/llm.md runs and prints what its ``#>`` lines say."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("code", BLOCKS, ids=[f"example-{n}" for n in range(1, len(BLOCKS) + 1)])
def test_example_prints_its_expected_output(code: str, require_extra: Callable[[str, str], ModuleType]) -> None:
    if code.startswith("# requires: local"):
        require_extra("stellate.llm.local", "local")
    expected = [line.removeprefix("#>").removeprefix(" ") for line in code.splitlines() if line.startswith("#>")]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, f"{DOC.name}-example", "exec"), {"__name__": "__docs__"})
    assert output.getvalue().splitlines() == expected
