"""How stellate's own browser tests, screenshots and UI benchmark start Debian's chromium (never a downloaded one)."""

from __future__ import annotations

import os
import shutil

__all__ = ["CHROMIUM", "CHROMIUM_FLAGS"]

CHROMIUM = os.environ.get("STELLATE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
"""The browser: ``$STELLATE_CHROMIUM``, else ``chromium`` on the PATH."""

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    # Without these, a machine with no internet refuses chromium's background connections at every start.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Arguments for a headless chromium that reaches nothing but the page it is pointed at."""
