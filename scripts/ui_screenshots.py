"""Regenerate the screenshots of docs/ui.md: every page of the devtools UI, in English and Chinese, light and dark.

Usage: ``python scripts/ui_screenshots.py`` (needs ``pip install -e ".[dev]"`` and Debian's ``chromium``; for
readable Chinese, a CJK font such as ``fonts-wqy-microhei``). It grows the demo forest in a temporary
database with ``stellate demo``, serves it with ``stellate serve``, and writes
``docs/images/<page>-<lang>-<theme>.png``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

from stellate.testing.browser import CHROMIUM, CHROMIUM_FLAGS

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Grow the demo forest in ``db`` and serve it; returns the process and its URL."""
    env = {**os.environ, "STELLATE_DB": str(db), "NO_COLOR": "1"}
    subprocess.run([sys.executable, "-m", "stellate.cli", "demo"], env=env, check=True, capture_output=True)
    port = free_port()
    # The offline scripted model, with a reflector: Settings then show a model and the map's Reflect is enabled.
    served = {**env, "STELLATE_PROVIDER": "scripted"}
    command = [sys.executable, "-m", "stellate.cli", "serve", "--port", str(port), "--reflector"]
    process = subprocess.Popen(command, env=served)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("stellate serve did not start")


def stir(url: str, ids: dict[str, str]) -> None:
    """A few writes, so the Events page has something to show."""
    api = f"{url}/v1/sessions"
    httpx.put(f"{api}/{ids['Europe']}/insight", json={"content": "Compare Munich and Berlin rents."})
    httpx.put(f"{api}/{ids['North America']}/memory", json={"content": "Only with a funded research master's."})
    httpx.put(f"{api}/{ids['Budget: Berlin']}/insight", json={"content": "Check student housing in Berlin."})


def shoot(page: Any, url: str, ids: dict[str, str], lang: str, theme: str) -> None:
    """Every page in one language and theme."""
    page.goto(f"{url}/#/map")
    page.evaluate(
        "([l, t]) => { localStorage.setItem('stellate.lang', l); localStorage.setItem('stellate.theme', t); }",
        [lang, theme],
    )
    root, budget = ids["Study abroad plan"], ids["Budget"]
    views = {
        "map": f"#/map/{root}",
        "chat": f"#/chat/{root}",
        "inspector": f"#/inspect/{budget}",
        "events": "#/events",
        "settings": "#/settings",
        "compare": f"#/compare/{ids['Europe']}/{ids['North America']}",
    }
    for name, route in views.items():
        page.goto(f"{url}/{route}")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        if name == "events":
            stir(url, ids)
            page.locator(".event").nth(2).wait_for()
        page.wait_for_timeout(700)
        page.screenshot(path=str(OUT / f"{name}-{lang}-{theme}.png"))


def main() -> None:
    """Write the screenshots."""
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp) / "demo.db")
        try:
            forest = httpx.get(f"{url}/v1/forest").json()
            ids = {forest[0]["label"]: forest[0]["id"], **{c["label"]: c["id"] for c in forest[0]["children"]}}
            berlin = {"label": "Budget: Berlin", "context": "inherit"}
            ids["Budget: Berlin"] = httpx.post(f"{url}/v1/sessions/{ids['Budget']}/forks", json=berlin).json()["id"]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_FLAGS))
                for lang in ("en", "zh"):
                    for theme in ("light", "dark"):
                        context = browser.new_context(viewport={"width": 1280, "height": 760})
                        shoot(context.new_page(), url, ids, lang, theme)
                        context.close()
                browser.close()
        finally:
            process.terminate()
            process.wait(10)
    print(f"wrote {len(list(OUT.glob('*.png')))} screenshots to {OUT}")


if __name__ == "__main__":
    main()
