"""Approvals in a real browser: Approve / Deny / Edit on the tool card of a paused turn, and the badges."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import STREAMED, ServerThread, open_ui, poll

from stellate import Agent


class ApprovingServer(ServerThread):
    """The test server, with ``add`` needing approval."""

    def agent_of(self, store: Any, space: str) -> Agent:
        agent = super().agent_of(store, space)
        agent.approvals = type(agent.approvals)({"add": True})
        return agent


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    running = ApprovingServer(tmp_path / "ui.db").start()
    yield running
    running.stop()


def paused(server: ServerThread, label: str) -> str:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label=label))
    result = server.run(agent.turn(session.id, "stream the sum of 2 and 3"))
    assert result.reason == "awaiting_approval"
    return session.id


def test_edit_then_approve_resumes_the_turn_with_the_edited_arguments(server: ServerThread, page: Any) -> None:
    sid = paused(server, "Adder")
    open_ui(page, server.url, f"#/chat/{sid}")
    card = page.locator(".tool-card.waiting")
    card.wait_for()
    assert page.locator(".chat-header .badge.awaiting").inner_text() == "waits for approval (1)"
    assert page.locator(".tree .badge.awaiting").count() == 1
    assert '"a": 2' in card.locator("pre").first.inner_text()
    card.get_by_role("button", name="Edit").click()
    card.get_by_role("textbox", name="Arguments to run the tool with (JSON)").fill('{"a": 40, "b": 2}')
    card.get_by_role("button", name="Approve with these arguments").click()
    done = page.locator(".tool-card.ok")
    done.wait_for(timeout=15000)
    poll(lambda: page.locator(".msg.assistant .bubble").last.inner_text() == STREAMED, what="the resumed reply")
    assert "Approved by user" in done.inner_text()
    if not done.evaluate("(card) => card.open"):
        done.locator("summary").click()
    assert "42" in done.locator("pre").nth(1).inner_text()
    assert '"a": 40' in done.locator("pre").first.inner_text()
    poll(lambda: page.locator(".chat-header .badge.awaiting").count() == 0, what="the badge gone")


def test_deny_with_a_reason_is_the_result_the_model_read(server: ServerThread, page: Any) -> None:
    sid = paused(server, "Denied")
    open_ui(page, server.url, "#/map")
    page.get_by_role("button", name="List view").click()
    row = page.locator(".session-list li", has_text="Denied")
    poll(lambda: row.locator(".badge.awaiting").count() == 1, what="the map's list marking the paused session")
    open_ui(page, server.url, f"#/chat/{sid}")
    card = page.locator(".tool-card.waiting")
    card.wait_for()
    card.get_by_role("button", name="Deny").click()
    card.get_by_role("textbox", name="Reason (the model reads it)").fill("<b>not</b> today")
    card.get_by_role("button", name="Deny the call").click()
    failed = page.locator(".tool-card.error")
    failed.wait_for(timeout=15000)
    assert "Denied by user: <b>not</b> today" in failed.inner_text()  # shown as text, never as HTML
    assert page.locator(".tool-card b").count() == 0
    events = server.run(server.agents["default"].store())
    log = server.run(events.read_events(sid))  # type: ignore[arg-type]
    [result] = [e.data for e in log if e.type == "tool/result"]
    assert result["content"].endswith("Their reason: <b>not</b> today") and result["is_error"] is True


def test_a_turn_sent_from_the_page_pauses_there_and_approve_finishes_it(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Live"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("stream the sum of 2 and 3")
    box.press("Enter")
    card = page.locator(".tool-card.waiting")
    card.get_by_role("button", name="Approve").wait_for(timeout=15000)
    assert page.locator(".composer button.danger").is_hidden(), "a paused turn is not running"
    card.get_by_role("button", name="Approve").click()
    page.locator(".tool-card.ok").wait_for(timeout=15000)
    poll(lambda: page.locator(".msg.assistant .bubble").last.inner_text() == STREAMED, what="the resumed reply")


def test_the_events_page_lists_the_request_and_the_decision(server: ServerThread, page: Any) -> None:
    open_ui(page, server.url, "#/events")
    sid = paused(server, "Audited")
    server.run(server.agents["default"].deny(sid, server.run(_first_call(server, sid)), reason="no", by="ann"))
    rows = page.locator(".event-list li")
    poll(lambda: "Denied by ann · add: no" in " ".join(rows.all_inner_texts()), what="the decision listed")
    assert any("waits for approval" in text for text in rows.all_inner_texts())


async def _first_call(server: ServerThread, sid: str) -> str:
    [pending] = await server.agents["default"].pending_approvals(sid)
    return pending.call_id
