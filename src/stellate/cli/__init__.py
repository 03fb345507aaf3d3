"""The ``stellate`` command (extra ``cli``): ``demo``, ``chat``, ``sessions ...`` and ``db ...``.

Run it as ``stellate`` or ``python -m stellate.cli``; `main` is the entry point. Without rich or
prompt-toolkit installed, the command prints the ``pip install`` that adds them instead of a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]

_MISSING_EXTRA_STATUS = 78  # EXIT_STATUS["missing_extra"]; kept here so this module imports without rich


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``stellate`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    try:
        # Each imports its extra's library first, or fails naming the pip install.
        import stellate.cli.console  # rich
        import stellate.cli.lines  # noqa: F401 - prompt-toolkit
    except ImportError as exc:
        print(f"stellate: {exc} [missing_extra]", file=sys.stderr)
        return _MISSING_EXTRA_STATUS
    from stellate.cli.app import run

    return run(argv)
