"""The terminal: rich consoles for output and diagnostics, plain writes for pipes, and progress bars.

rich is the ``cli`` extra (`stellate.cli.main` checks it is installed); a console is built on first use, so a
command whose piped output is plain text (``stellate sessions list | ...``) starts without importing rich.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PROGRESS_MIN_EVENTS", "Consoles", "make_consoles", "progress_bar"]

#: Copies shorter than this finish too fast for a bar to help.
PROGRESS_MIN_EVENTS = 2000
_PIPE_WIDTH = 120


class Consoles:
    """Where the command writes: results to ``out`` (stdout), progress and notes to ``err`` (stderr).

    ``out`` and ``err`` are rich consoles, built on first use. ``plain_out`` says that stdout is a pipe or a file
    (and no ``FORCE_COLOR`` asks for styles), where a command may `write_out` plain text instead.
    """

    __slots__ = ("_err", "_err_stream", "_out", "_out_stream")

    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self._out_stream, self._err_stream = out, err
        self._out: Console | None = None
        self._err: Console | None = None

    @property
    def out(self) -> Console:
        """The rich console on stdout."""
        if self._out is None:
            self._out = _console(self._out_stream)
        return self._out

    @property
    def err(self) -> Console:
        """The rich console on stderr."""
        if self._err is None:
            self._err = _console(self._err_stream)
        return self._err

    @property
    def plain_out(self) -> bool:
        """Whether stdout takes plain text: not a terminal, and no ``FORCE_COLOR`` in the environment."""
        if self._out is not None:
            return not self._out.is_terminal
        isatty = getattr(self._out_stream, "isatty", None)
        return not (isatty is not None and isatty()) and "FORCE_COLOR" not in os.environ

    @property
    def width(self) -> int:
        """The width plain output fits: ``$COLUMNS``, else as wide as piped rich output."""
        columns = os.environ.get("COLUMNS", "")
        return int(columns) if columns.isdigit() and int(columns) > 0 else _PIPE_WIDTH

    def write_out(self, text: str) -> None:
        """Write ``text`` to stdout as it is (no markup, no wrapping)."""
        self._out_stream.write(text)
        self._out_stream.flush()

    def say(self, line: str) -> None:
        """One line of results on stdout: plain on a pipe, through the console on a terminal."""
        if self.plain_out:
            self.write_out(line + "\n")
        else:
            self.out.print(line)


def make_consoles() -> Consoles:
    """Consoles on the current ``sys.stdout`` and ``sys.stderr`` (looked up now, so tests can capture them)."""
    return Consoles(sys.stdout, sys.stderr)


def _console(stream: IO[str]) -> Console:
    from rich.console import Console

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
