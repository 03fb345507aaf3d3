"""Deleting from the star map in Chromium: the dialog names what goes and what keeps a copy, and another
client's map drops the node live."""

from __future__ import annotations

from typing import Any

import pytest
from ui_support import ServerThread, map_ids, open_ui, poll

from stellate.errors import NotFoundError
from stellate.store import SessionId


def test_delete_names_what_goes_and_another_clients_map_follows(server: ServerThread, page: Any, browser: Any) -> None:
    """Delete asks what becomes of the fork, lists the erased and the kept, erases; both maps drop the node."""
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Secret plan"))
    server.run(agent.turn(root.id, "hello"))
    child = server.run(agent.fork_session(root.id, label="Kept branch", context="inherit"))
    other = server.run(agent.create_session(label="Bystander"))
    watcher_context = browser.new_context(viewport={"width": 1280, "height": 800})
    watcher = watcher_context.new_page()
    try:
        open_ui(watcher, server.url)
        poll(lambda: map_ids(watcher) == {root.id, child.id, other.id}, what="the forest on the other client")
        open_ui(page, server.url, f"#/map/{root.id}")
        page.locator(".panel").get_by_role("button", name="Delete").click()
        dialog = page.get_by_role("dialog", name="Delete for good")
        dialog.get_by_text("1 session(s) inherit from it").wait_for()
        assert "Kept branch" in dialog.locator(".erase-list.dependents").inner_text()
        confirm = dialog.get_by_role("button", name="Delete for good")
        assert confirm.is_disabled(), "nothing can be erased before the choice for the fork"
        dialog.get_by_label("Keep them (each gets its own copy of what it inherited)").check()
        dialog.locator(".erase-list.kept").wait_for()
        assert dialog.locator(".erase-list.erased").inner_text() == "Secret plan"
        assert dialog.locator(".erase-list.kept").inner_text() == "Kept branch"
        confirm.click()
        poll(lambda: not page.get_by_role("dialog").count(), what="the dialog to close")

        with pytest.raises(NotFoundError):
            server.run(agent.get_session_digest(root.id))
        store = server.run(agent.store())
        assert (server.run(store.get_session(SessionId(child.id)))).inherited == 0
        poll(lambda: map_ids(page) == {child.id, other.id}, what="the node gone from this map")
        poll(lambda: map_ids(watcher) == {child.id, other.id}, what="the node gone from the other client's map")
        messages = server.run(agent.list_messages(child.id))
        assert [m.content for m in messages if m.role == "user"] == ["hello"], "the kept fork reads its history"
    finally:
        watcher_context.close()
