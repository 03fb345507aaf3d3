"""A smoke run of the map benchmark at a small size, so `python -m bench.ui_map` keeps working."""

from __future__ import annotations

from typing import Any

from bench.ui_map import Served, measure


def test_the_map_benchmark_measures_a_small_forest(browser: Any) -> None:
    with Served(30) as served:
        found = measure(browser, served.url, 30)
    assert found["nodes"] == 30
    assert all(found[key] >= 0 for key in ("usable", "layout", "paint", "hit"))


def test_search_highlights_matching_sessions(browser: Any) -> None:
    with Served(30) as served:
        page = browser.new_context().new_page()
        page.goto(f"{served.url}/#/map")
        page.wait_for_selector("body[data-ready=true]")
        page.get_by_role("searchbox", name="Search sessions").fill("root")
        page.get_by_role("button", name="List view").click()
        assert page.locator(".session-list button").all_inner_texts() == ["Root 0"]
        assert page.evaluate("() => window.stellate.map.query") == "root"
        page.context.close()
