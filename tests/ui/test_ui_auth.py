"""Keys in a real browser: the UI asks for one, keeps it for the tab only, and shows only that key's space."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_support import ServerThread, map_ids, poll

from stellate.server.keys import KeyRing


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[ServerThread, str, str]]:
    ring = KeyRing(tmp_path / "keys.json")
    alpha, beta = ring.create("alpha")[1], ring.create("beta")[1]
    running = ServerThread(tmp_path / "keyed.db", keys=ring).start()
    yield running, alpha, beta
    running.stop()


def sign_in(page: Any, url: str, key: str, route: str = "#/map") -> None:
    page.goto(f"{url}/{route}")
    dialog = page.get_by_role("dialog", name="API key needed")
    dialog.get_by_label("API key").fill(key)
    dialog.get_by_role("button", name="Connect").click()
    page.wait_for_selector("body[data-ready=true]", timeout=15000)


def test_a_foreign_key_sees_nothing_of_another_space(keyed: tuple[ServerThread, str, str], browser: Any) -> None:
    server, alpha, beta = keyed
    made = httpx.post(
        f"{server.url}/v1/sessions", json={"label": "Alpha plan"}, headers={"Authorization": f"Bearer {alpha}"}
    )
    secret = made.json()["id"]

    owner = browser.new_context().new_page()
    sign_in(owner, server.url, alpha)
    poll(lambda: map_ids(owner) == {secret}, what="the owner's session")
    owner.context.close()

    page = browser.new_context().new_page()
    page.goto(f"{server.url}/")
    wrong = page.get_by_role("dialog", name="API key needed")
    wrong.get_by_label("API key").fill("stl_not-a-key")
    wrong.get_by_role("button", name="Connect").click()
    refused = page.get_by_role("dialog", name="API key needed")
    assert "refused" in refused.get_by_role("alert").inner_text()
    refused.get_by_label("API key").fill(beta)
    refused.get_by_role("button", name="Connect").click()
    page.wait_for_selector("body[data-ready=true]", timeout=15000)

    assert page.locator(".map-page .pill").inner_text() == "0 sessions"
    assert map_ids(page) == set()
    for route in (f"#/chat/{secret}", f"#/inspect/{secret}"):
        page.evaluate("(route) => { location.hash = route; }", route)
        page.get_by_text("No such session here.").wait_for()
        assert "Alpha plan" not in page.inner_text("body"), route
    assert page.evaluate("() => sessionStorage.getItem('stellate.key')") == beta, "kept for the tab"
    assert page.evaluate("() => JSON.stringify(localStorage)").find(beta) < 0, "never written to lasting storage"
    page.context.close()
