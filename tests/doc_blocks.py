"""The shell blocks of README.md and docs/*.md, each with the marker on the line before it.

The rule (checked by tests/test_docs.py): every ```bash block either runs in a test, marked
``<!-- run by tests/PATH.py::test_name -->`` where that test fetches it with `blocks_run_by`, or says why it
cannot, marked ``<!-- not run: REASON -->``. A test runs a block's commands after its ``pip install``: the
environment the tests run in is that install, and tests/test_docs.py checks that every extra it names exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = ("bash", "sh", "shell", "console", "zsh")

_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"^<!-- (?P<text>.*?) -->$")
RUN_BY_MARKER = re.compile(r"^run by (?P<path>tests/[\w/]+\.py)::(?P<test>test_\w+)$")
NOT_RUN_MARKER = re.compile(r"^not run: (?P<reason>\S.{9,})$")


@dataclass(frozen=True, slots=True)
class Fence:
    """A fenced block of a page."""

    page: str
    """The page, relative to the repository: ``README.md``, ``docs/deploy.md``."""
    line: int
    """The line of its opening fence (1-based)."""
    info: str
    """The fence's info string: ``bash``, ``python``, or empty."""
    code: str
    """Its text."""
    marker: str | None
    """The HTML comment on the line before it, if any."""

    @property
    def is_shell(self) -> bool:
        """Whether it is a shell block (the rule applies)."""
        return self.info.split(" ", 1)[0] in SHELL_LANGUAGES

    @property
    def where(self) -> str:
        """``docs/deploy.md:24`` for messages."""
        return f"{self.page}:{self.line}"

    def runner(self) -> tuple[str, str] | None:
        """The ``(path, test)`` its marker names, or None."""
        found = RUN_BY_MARKER.match(self.marker or "")
        return (found["path"], found["test"]) if found else None

    def commands(self) -> list[str]:
        """Its command lines, continuation lines joined and trailing ``  # comments`` dropped."""
        joined = self.code.replace("\\\n", " ")
        return [line.split("  #", 1)[0].strip() for line in joined.splitlines() if line.strip()]


def fences() -> list[Fence]:
    """Every fenced block of every page, in page order."""
    found: list[Fence] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.match(before)
            name = str(page.relative_to(ROOT))
            found.append(Fence(name, line, match["info"].strip(), match["code"], marker["text"] if marker else None))
    return found


def shell_blocks() -> list[Fence]:
    """The shell blocks the rule applies to."""
    return [fence for fence in fences() if fence.is_shell]


def blocks_run_by(test: str) -> list[Fence]:
    """The shell blocks marked ``run by ...::test``; the test that runs them calls this with its own name."""
    found = [block for block in shell_blocks() if (block.runner() or ("", ""))[1] == test]
    assert found, f"no shell block is marked `<!-- run by tests/...::{test} -->`"
    return found
