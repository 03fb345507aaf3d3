"""The star map in a real browser: the demo forest, the side panel, and live updates without reload."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_support import ServerThread, gate, map_ids, open_ui, poll

DEMO_LABELS = {"Study abroad plan", "Europe", "North America", "Budget"}


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[str]:
    """``stellate demo`` grows its forest, then ``stellate serve`` serves it (two real commands)."""
    db = tmp_path / "demo.db"
    env = {**os.environ, "NO_COLOR": "1", "STELLATE_DB": str(db)}
    env.pop("STELLATE_PROVIDER", None)
    subprocess.run([sys.executable, "-m", "stellate.cli", "demo"], env=env, check=True, capture_output=True, timeout=60)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "stellate.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        poll(lambda: _healthy(url), timeout=30, what="stellate serve")
        yield url
    finally:
        process.terminate()
        process.wait(15)
        if process.stdout is not None:
            process.stdout.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_map_shows_the_demo_forest_and_a_click_opens_the_panel(demo_server: str, page: Any) -> None:
    forest = httpx.get(f"{demo_server}/v1/forest").json()
    ids = {forest[0]["id"], *(child["id"] for child in forest[0]["children"])}
    open_ui(page, demo_server)
    poll(lambda: map_ids(page) == ids, what="the demo's four sessions on the map")
    assert page.locator(".map-page .pill").inner_text() == "4 sessions"

    root = forest[0]
    point = page.evaluate("(id) => window.stellate.map.screenPoint(id)", root["id"])
    page.mouse.move(point["x"], point["y"])
    card = page.locator(".hover-card")
    card.wait_for(state="visible")
    assert "Study abroad plan" in card.inner_text() and "2 turns" in card.inner_text()
    page.mouse.click(point["x"], point["y"])
    panel = page.locator(".panel")
    panel.wait_for(state="visible")
    assert panel.locator("h2").inner_text() == "Study abroad plan"
    assert "Europe fits the budget" in panel.inner_text(), "the panel shows the root's memory (the synthesis)"
    assert {b.inner_text() for b in panel.locator(".children button").all()} == DEMO_LABELS - {"Study abroad plan"}

    page.get_by_role("button", name="List view").click()
    assert {b.inner_text() for b in page.locator(".session-list button").all()} == DEMO_LABELS


def test_a_fork_made_by_the_model_mid_turn_appears_without_reload(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Planner"))
    open_ui(page, server.url)
    poll(lambda: map_ids(page) == {root.id}, what="the root on the map")

    turn = server.spawn(agent.turn(root.id, "fork a side quest"))
    child_id = poll(lambda: _child_in_store(server, root.id), timeout=15, what="the model's fork in the store")
    forked_at = time.monotonic()
    poll(lambda: child_id in map_ids(page), timeout=5, what="the model's fork on the map")
    seen_after = time.monotonic() - forked_at
    assert not turn.done(), "the fork is on the map while the turn that made it is still running"
    assert page.evaluate("(id) => window.stellate.forest.running.has(id)", root.id), "the parent pulses as running"
    assert page.evaluate("(id) => window.stellate.forest.nodes.get(id).label", child_id) == "Side quest"
    print(f"model fork on the map {seen_after * 1000:.0f} ms after it was stored")

    gate("model").set()
    assert turn.result(15).content == "Forked a side quest."
    poll(lambda: not page.evaluate("(id) => window.stellate.forest.running.has(id)", root.id), what="the turn's end")


def _child_in_store(server: ServerThread, root_id: str) -> str | None:
    node = server.run(server.agents["default"].get_node(root_id))
    return node.children[0].id if node.children else None


def test_the_panel_forks_with_a_profile_and_reflect_lights_up_the_insights(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Lit root"))
    server.run(agent.turn(root.id, "hello"))
    open_ui(page, server.url, f"#/map/{root.id}")
    panel = page.locator(".panel")
    panel.get_by_role("button", name="Fork…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Label", exact=True).fill("Lit critic")
    dialog.get_by_label("Profile", exact=True).select_option("critic")
    dialog.get_by_label("Profile variables").fill("topic=the budget")
    dialog.get_by_role("button", name="Create branch").click()
    child = poll(lambda: _child_in_store(server, root.id), what="the fork")
    poll(lambda: page.evaluate("() => location.hash") == f"#/chat/{child}", what="the child opened (seed 002)")
    page.get_by_role("button", name="Show on map").click()
    poll(lambda: child in map_ids(page), what="the fork on the map")
    detail = httpx.get(f"{server.url}/v1/sessions/{child}").json()
    assert detail["label"] == "Lit critic" and detail["system_prompt"] == "You critique the budget."
    assert detail["source_id"] == root.id, "the default context inherits the history"

    page.get_by_role("button", name="Reflect").click()
    result = page.get_by_role("dialog", name="Reflection")
    assert "Everything is on track." in result.inner_text()
    assert {b.inner_text() for b in result.locator(".insights button").all()} == {"Lit root", "Lit critic"}
    assert set(page.evaluate("() => [...window.stellate.map.lit]")) == {root.id, child}, "they light up on the map"
    result.get_by_role("button", name="Close").click()
    poll(
        lambda: "A note for Lit critic." in page.locator(".panel").inner_text() or _select(page, child), what="insight"
    )


def _select(page: Any, session_id: str) -> bool:
    page.evaluate("(id) => window.stellate.map.select(id)", session_id)
    return False
