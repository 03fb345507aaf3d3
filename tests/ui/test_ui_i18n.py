"""Languages in a real browser: switching to 中文 changes every visible label, and the choice is remembered."""

from __future__ import annotations

import re
from typing import Any

from ui_support import ServerThread, open_ui, poll

# Words that are the same in both languages: names and a few technical terms.
ALLOWED = {"API", "seq", "stellate", "demo", "Enter", "Shift", "English"}
VISIBLE_TEXT = """() => {
  const out = [];
  const data = (el) => el.closest('[translate=no]');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || data(el) || el.closest('select') || !el.checkVisibility()) continue;
    out.push(node.textContent);
  }
  for (const el of document.querySelectorAll('[placeholder], [title], [aria-label]')) {
    if (data(el) || !el.checkVisibility()) continue;
    for (const name of ['placeholder', 'title', 'aria-label']) {
      if (el.getAttribute(name)) out.push(el.getAttribute(name));
    }
  }
  for (const select of document.querySelectorAll('select')) {
    if (data(select) || !select.checkVisibility()) continue;
    for (const option of select.options) if (!data(option)) out.push(option.textContent);
  }
  return out;
}"""


def english_words(page: Any) -> set[str]:
    words = set()
    for text in page.evaluate(VISIBLE_TEXT):
        words.update(w for w in re.findall(r"[A-Za-z]{2,}", text) if w not in ALLOWED)
    return words


def visit(page: Any, route: str, ready: str) -> None:
    page.evaluate("(route) => { location.hash = route; }", route)
    page.locator(ready).first.wait_for()
    page.wait_for_timeout(200)


def test_switching_to_chinese_changes_every_visible_label(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="旅行计划"))
    server.run(agent.turn(root.id, "stream 请用加法"))
    child = server.run(agent.fork_session(root.id, label="预算", context="inherit"))
    server.run(agent.turn(child.id, "中文"))
    pages = [
        ("#/map", ".map-page canvas"),
        (f"#/chat/{child.id}", ".msg.assistant .branch"),
        (f"#/inspect/{child.id}", ".ctx-messages li"),
        ("#/events", ".event"),
        ("#/settings", ".settings .grid"),
    ]
    open_ui(page, server.url)
    server.run(agent.put_memory(child.id, "备忘"))  # an event for the Events page
    english = set()
    for route, ready in pages:
        visit(page, route, ready)
        english |= english_words(page)
    assert {"Star", "Branch", "Inspector", "Settings", "Events"} <= english, "the check sees English labels"

    page.locator("#lang-toggle").click()
    poll(lambda: page.evaluate("() => document.documentElement.lang") == "zh-CN", what="the switch")
    for route, ready in pages:
        visit(page, route, ready)
        if route == "#/map":
            page.get_by_role("button", name="列表视图").click()
            page.locator(".session-list button", has_text="旅行计划").click()
            page.locator(".panel").wait_for()
            assert english_words(page) == set(), f"{route} with its panel"
            page.get_by_role("button", name="分叉…").click()
            page.locator("dialog").wait_for()
            assert english_words(page) == set(), "the fork dialog"
            page.get_by_role("button", name="取消").click()
        elif route.startswith("#/chat"):
            page.locator(".tool-card summary").first.click()
        assert english_words(page) == set(), route

    page.locator("#theme-toggle").click()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("#nav a[data-page=settings]").inner_text() == "设置", "the language is remembered"
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark", "so is the theme"
