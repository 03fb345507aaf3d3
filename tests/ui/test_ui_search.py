"""Finding things in a real browser: message search from the map and the chat sidebar (a hit opens the
conversation at that message), and the inspector's searchable session picker at 2,000 sessions."""

from __future__ import annotations

from typing import Any

from ui_support import ServerThread, open_ui, poll

from stellate.log import make_event
from stellate.store import SessionId


def _hits(page: Any, where: str) -> Any:
    return page.locator(f"{where} .search-results li.hit")


def _opened_at(page: Any, seq: int) -> bool:
    target = page.locator(f".messages .msg.search-target[data-seq='{seq}']")
    return target.count() == 1 and bool(target.evaluate("(el) => document.activeElement === el"))


def test_a_hit_found_from_the_map_opens_the_conversation_at_that_message(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Long talk"))
    for n in range(30):  # enough turns that the message found is far above the end of the conversation
        server.run(agent.turn(session.id, f"filler message {n}"))
    server.run(agent.turn(session.id, "中文"))
    for n in range(10):
        server.run(agent.turn(session.id, f"more filler {n}"))
    page_of = server.run(agent.search("filler message 3"))  # the library's view of the hit
    user_hit = next(h for h in page_of.hits if h.role == "user" and h.snippet == "filler message 3")

    open_ui(page, server.url, "#/map")
    box = page.locator(".map-page .toolbar input[type=search]")
    box.fill("filler message 3")
    hits = _hits(page, ".map-page")
    poll(lambda: hits.count() >= 2, what="the hits under the map's search box")
    first = hits.nth(0)
    assert "Long talk" in first.inner_text()
    assert [m.inner_text() for m in first.locator("mark").all()][-3:] == ["filler", "message", "3"]
    box.press("ArrowDown")
    assert first.get_attribute("aria-selected") == "true"
    user_row = page.locator(f".map-page li.hit[data-seq='{user_hit.seq}']")
    user_row.click()
    poll(lambda: page.evaluate("() => location.hash") == f"#/chat/{session.id}", what="the conversation")
    poll(lambda: _opened_at(page, user_hit.seq), what="the message found, highlighted and focused")
    box_of = page.locator(f".messages .msg[data-seq='{user_hit.seq}']").bounding_box()
    pane = page.locator(".messages").bounding_box()
    assert pane["y"] <= box_of["y"] and box_of["y"] + box_of["height"] <= pane["y"] + pane["height"], "in view"

    found = server.run(agent.search("继续")).hits
    assert [h.role for h in found] == ["assistant"]
    sidebar_box = page.locator(".chat-page .tree-pane input[type=search]").first
    sidebar_box.fill("继续")
    sidebar = _hits(page, ".chat-page .tree-pane")
    poll(lambda: sidebar.count() == 1, what="the Chinese hit in the sidebar")
    sidebar_box.press("ArrowDown")
    sidebar_box.press("Enter")
    poll(lambda: _opened_at(page, found[0].seq), what="the reply found from the sidebar, in the same conversation")


def test_snippets_and_labels_are_shown_as_text(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="<img src=x onerror=window.__label=1>"))
    server.run(agent.turn(session.id, "xss please"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.locator(".chat-page .tree-pane input[type=search]").first
    box.fill("onerror")
    hits = _hits(page, ".chat-page .tree-pane")
    poll(lambda: hits.count() >= 1, what="the hit in the model's reply")
    results = page.locator(".chat-page .search-results")
    assert "<img src=x onerror=alert(1)>" in results.inner_text()
    assert results.locator("img, script").count() == 0
    assert "<img src=x onerror=window.__label=1>" in hits.first.locator("strong").inner_text()
    assert page.evaluate("() => window.__pwned === undefined && window.__label === undefined")


def test_archived_sessions_are_found_only_when_asked(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    old = server.run(agent.create_session(label="Old trip"))
    server.run(agent.turn(old.id, "glacier walk"))
    server.run(agent.archive_session(old.id))
    open_ui(page, server.url, "#/map")
    box = page.locator(".map-page .toolbar input[type=search]")
    box.fill("glacier")
    status = page.locator(".map-page .search-results [role=status]")
    poll(lambda: status.inner_text() == "No message matches", what="nothing among active sessions")
    page.locator(".map-page .search-results input[type=checkbox]").check()
    poll(lambda: _hits(page, ".map-page").count() == 2, what="the archived session's messages")
    assert _hits(page, ".map-page").locator(".badge.archived").count() == 2


def test_the_inspector_picker_filters_thousands_of_sessions_by_typing(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]

    async def many() -> None:
        store = await agent.store()
        for n in range(2000):
            label = f"Bulk {n:04d}"
            await store.create_session(session_id=SessionId(f"bulk-{n:04d}"), events=[_created(label)])

    server.run(many(), timeout=90)
    wanted = server.run(agent.create_session(label="旅行计划 Kyoto"))
    open_ui(page, server.url, "#/inspect")
    picker = page.get_by_role("combobox", name="Session")
    picker.click()
    options = page.locator(".session-picker li[role=option]")
    poll(lambda: options.count() > 0, what="the picker's list")
    assert options.count() <= 50, "only a window of the 2,001 sessions is drawn"
    assert "2001" in page.locator(".picker-count").inner_text()
    picker.fill("kyoto")
    poll(lambda: options.count() == 1, what="the one match")
    picker.fill("bulk 1999")
    poll(lambda: options.count() == 1 and "Bulk 1999" in options.first.inner_text(), what="type-ahead by label")
    picker.fill("bulk-00")
    poll(lambda: options.count() == 50, what="a hundred matches, fifty drawn")
    picker.press("ArrowDown")
    picker.press("ArrowDown")
    assert page.locator(".session-picker li[aria-selected=true]").inner_text().startswith("Bulk 0002")
    picker.press("End")
    assert page.locator(".session-picker li[aria-selected=true]").inner_text().startswith("Bulk 0099")
    picker.press("Enter")
    poll(lambda: page.evaluate("() => location.hash") == "#/inspect/bulk-0099", what="the picked session")
    picker = page.get_by_role("combobox", name="Session")
    poll(lambda: "bulk-0099" in picker.input_value(), what="the picker names the open session")
    picker.fill("旅行")
    poll(lambda: options.count() == 1, what="a Chinese label")
    options.first.click()
    poll(lambda: page.evaluate("() => location.hash") == f"#/inspect/{wanted.id}", what="picked with the mouse")


def _created(label: str) -> Any:
    return make_event("session/created", {"label": label})
