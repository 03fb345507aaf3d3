"""An argument parser that reports mistakes as `UsageError`.

They then print as one line with an exit status from the table, and a mistyped slash command does not
end a chat.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from stellate.errors import UsageError

__all__ = ["CommandParser"]


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` raising `UsageError` instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise the mistake (argparse calls this for every parse error)."""
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")
