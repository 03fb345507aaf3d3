"""The ``stellate`` command (extra ``cli``): ``demo``, ``chat``, ``sessions ...`` and ``db ...``.

Run it as ``stellate`` or ``python -m stellate.cli``; `main` is the entry point. Without rich or
prompt-toolkit installed, the command prints the ``pip install`` that adds them instead of a traceback.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["main"]

_MISSING_EXTRA_STATUS = 78  # EXIT_STATUS["missing_extra"]; kept here so this module imports without rich


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``stellate`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    # Looked up, not imported: prompt-toolkit alone costs a fresh process ~0.1 s, and only `chat` uses it.
    for module, name in (("rich", "rich"), ("prompt_toolkit", "prompt-toolkit")):
        if importlib.util.find_spec(module) is None:
            print(
                f'stellate: the stellate command needs {name}: pip install "stellate[cli]" [missing_extra]',
                file=sys.stderr,
            )
            return _MISSING_EXTRA_STATUS
    from stellate.cli.app import run

    return run(argv)
