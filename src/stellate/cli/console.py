"""The terminal: rich consoles for output and diagnostics, and progress bars for long copies.

rich is the ``cli`` extra; this module imports it at the top, so importing the command without the extra
fails here with the exact ``pip install``, which `stellate.cli.main` prints.
"""

from __future__ import annotations

try:
    from rich.console import Console
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/cli/test_app.py
    raise ImportError('the stellate command needs rich: pip install "stellate[cli]"') from exc

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

__all__ = ["PROGRESS_MIN_EVENTS", "Consoles", "make_consoles", "progress_bar"]

#: Copies shorter than this finish too fast for a bar to help.
PROGRESS_MIN_EVENTS = 2000
_PIPE_WIDTH = 120


@dataclass(frozen=True, slots=True)
class Consoles:
    """Where the command writes: results to ``out`` (stdout), progress and notes to ``err`` (stderr)."""

    out: Console
    err: Console


def make_consoles() -> Consoles:
    """Consoles on the current ``sys.stdout`` and ``sys.stderr`` (looked up now, so tests can capture them)."""
    return Consoles(out=_console(sys.stdout), err=_console(sys.stderr))


def _console(stream: IO[str]) -> Console:
    console = Console(file=stream, highlight=False, emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _PIPE_WIDTH  # piped output: wide enough that ids and tables are not cut
    return console


@contextlib.contextmanager
def progress_bar(console: Console, description: str) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback drawing a bar on ``console``, shown on terminals for long copies only."""
    if not console.is_terminal:
        yield _ignore
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # ~20 ms

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=None, visible=False)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, visible=total >= PROGRESS_MIN_EVENTS)

        yield update


def _ignore(done: int, total: int) -> None:
    """Progress sink for pipes and files."""
