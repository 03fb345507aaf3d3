"""Fixtures of the browser tests: Debian's chromium driven by Playwright, against a real server.

The browser is never downloaded (`.ci/run` installs Debian's ``chromium`` with apt when it is missing). When
chromium or Playwright is missing these tests are skipped with the reason, except under ``CI=true``, where
they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import ServerThread

from stellate.testing.browser import CHROMIUM, CHROMIUM_FLAGS

IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"browser tests need {reason} under CI=true", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Per module, not per session: while Playwright's sync API is alive the main thread counts as running an
    # event loop, which would break any async test collected after these.
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"playwright is not installed ({exc}); pip install -e '.[dev]'")
    if not Path(CHROMIUM).exists():
        _unavailable(f"chromium is not installed at {CHROMIUM}; apt-get install -y chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_FLAGS))
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    elsewhere: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    # The UI works offline: every request goes to the server on loopback (or is inline data).
    opened.on(
        "request", lambda r: None if r.url.startswith(("http://127.0.0.1:", "data:")) else elsewhere.append(r.url)
    )
    yield opened
    context.close()
    assert not errors, f"the page raised: {errors}"
    assert not elsewhere, f"the page fetched from elsewhere: {elsewhere}"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "ui.db").start()
    yield running
    running.stop()
