"""The Events page in a real browser: live, filtered (errors included), pausable."""

from __future__ import annotations

from typing import Any

from ui_support import ServerThread, open_ui, poll

from stellate.engine.events import AgentEvent


def test_events_arrive_live_and_the_error_filter_shows_errors(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Watched"))

    def broken_hook(event: AgentEvent) -> None:
        raise RuntimeError("the hook broke")

    agent.add_hook(broken_hook, types=["memory_updated"])
    open_ui(page, server.url, "#/events")
    rows = page.locator(".event-list li.event")
    server.run(agent.put_memory(session.id, "remember this"))
    poll(lambda: {r.get_attribute("data-type") for r in rows.all()} >= {"memory_updated", "error"}, what="live events")
    assert "Watched" in rows.first.inner_text() or "Watched" in rows.nth(1).inner_text(), "rows name the session"

    page.get_by_role("button", name="Errors").click()
    assert [r.get_attribute("data-type") for r in rows.all()] == ["error"]
    assert "hook_failed" in rows.first.inner_text() and "the hook broke" in rows.first.inner_text()

    page.get_by_role("button", name="All").click()
    page.get_by_role("button", name="Pause").click()
    shown = rows.count()
    server.run(agent.put_insight(session.id, "look here"))
    poll(lambda: "1" in page.locator(".events-page .pill").inner_text(), what="the held count")
    assert rows.count() == shown, "paused: nothing new is shown"
    page.get_by_role("button", name="Resume").click()
    poll(lambda: rows.first.get_attribute("data-type") == "insight_updated", what="the held event after resuming")


def test_the_events_page_lists_recent_events_after_a_reload(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Remembered"))
    server.run(agent.put_memory(session.id, "kept in the history"))
    server.run(agent.events_recorded())
    open_ui(page, server.url, "#/events")
    rows = page.locator(".event-list li.event")
    wanted = {"session_created", "memory_updated"}
    poll(lambda: {r.get_attribute("data-type") for r in rows.all()} >= wanted, what="the kept events")
    page.reload()
    poll(lambda: rows.count() >= 2, what="the rows after a reload")
    assert [r.get_attribute("data-type") for r in rows.all()][:2] == ["memory_updated", "session_created"]
    assert "kept in the history" in rows.first.inner_text() and "Remembered" in rows.nth(1).inner_text()
    server.run(agent.put_insight(session.id, "live after the reload"))
    poll(lambda: rows.first.get_attribute("data-type") == "insight_updated", what="a live event after the reload")
    assert rows.count() == 3, "the stream went on after the history without repeating it"
