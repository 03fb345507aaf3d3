"""A session that is running in the browser: branching from it mid-turn, and waiting behind another writer."""

from __future__ import annotations

from typing import Any

from test_ui_chat import _child
from ui_support import ServerThread, gate, open_ui, poll

from stellate.store import SessionId

BOX = "Message (Enter to send, Shift+Enter for a new line)"


def test_branch_from_here_while_the_session_runs_a_turn(server: ServerThread, page: Any) -> None:
    """The completed turn's Branch from here forks at once; the running turn goes on and completes intact."""
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Busy"))
    server.run(agent.turn(session.id, "done already"))
    turn = server.spawn(agent.turn(session.id, "slow one"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.locator(".msg.assistant", has_text="Checking the gate.").wait_for()  # the running turn is on screen
    done = page.locator(".msg.assistant", has_text="echo: done already").get_by_role("button", name="Branch from here")
    done.click()

    child = poll(lambda: _child(server, session.id), what="the branch in the store")
    poll(lambda: page.evaluate("() => location.hash") == f"#/chat/{child}", what="the chat to open the child")
    poll(lambda: page.locator(".msg.assistant .bubble").count() == 1, what="the child's transcript")
    texts = [m.inner_text() for m in page.locator(".msg .bubble").all()]
    assert texts == ["done already", "echo: done already"], "the child ends at the completed turn"
    assert not page.locator(".msg.problem").count(), "no problem shown"
    assert not turn.done(), "the source's turn is still running"

    gate("tool").set()
    assert turn.result(15).content == "Gate passed."
    ends = server.run(_turn_ends(server, session.id))
    assert ends == ["completed", "completed"]


def test_a_turn_behind_another_writer_says_so_and_then_runs(server: ServerThread, page: Any) -> None:
    """Sent while another process holds the session: one note (who, since when, how long at most), then the reply."""
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Shared"))
    store = server.run(agent.store())
    lease, _ = server.run(store.acquire_lease(SessionId(session.id), owner="another-host:4242:agent", ttl=60))
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.get_by_role("textbox", name=BOX)
    box.fill("hello there")
    box.press("Enter")
    note = page.locator(".msg.note.waiting")
    note.wait_for()
    text = note.inner_text()
    assert "another-host:4242:agent" in text and "since" in text and "Stop gives up" in text
    page.wait_for_timeout(300)
    assert note.count() == 1, "said once, not on every retry"
    server.run(store.release_lease(SessionId(session.id), lease))
    poll(lambda: page.locator(".msg.assistant", has_text="echo: hello there").count() == 1, what="the reply")
    assert not page.locator(".msg.problem").count()


async def _turn_ends(server: ServerThread, session_id: str) -> list[str]:
    store = await server.agents["default"].store()
    return [e.data["reason"] for e in await store.read_events(SessionId(session_id), types=("turn/end",))]
