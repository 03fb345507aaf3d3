"""An argument parser that reports mistakes as `UsageError`.

They then print as one line with an exit status from the table, and a mistyped slash command does not
end a chat. A command typed without its subcommand (``stellate``, ``stellate sessions``) is not a mistake
worth one line: it shows the usage and the subcommands instead.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from stellate.errors import UsageError

__all__ = ["CommandParser", "positive_int"]

_USAGE_STATUS = 2  # EXIT_STATUS["usage_error"]


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` raising `UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise the mistake (argparse calls this for every parse error).

        Raises:
            SystemExit: the subcommand is missing; the help listing the subcommands was printed.
            UsageError: any other mistake.
        """
        if self._subparsers is not None and message.startswith("the following arguments are required"):
            self.print_help(sys.stderr)
            raise SystemExit(_USAGE_STATUS)
        where = "" if " " not in self.prog and not self.prog.startswith("/") else f"{self.prog}: "
        raise UsageError(f"{where}{message} (see {self.prog} --help)")


def positive_int(text: str) -> int:
    """An argparse ``type``: a whole number of 1 or more (``--limit -1`` is a mistake, not "all but one").

    Raises:
        argparse.ArgumentTypeError: ``text`` is not such a number.
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, not {text!r}")
    return value
