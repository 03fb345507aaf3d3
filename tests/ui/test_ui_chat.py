"""The conversation page in a real browser: streaming, tool cards, Branch from here, untrusted output."""

from __future__ import annotations

from typing import Any

from ui_support import STREAMED, ServerThread, gate, map_ids, open_ui, poll

from stellate.store import SessionId

# The bubble of the round after the tool call (the first round streams its own short text).
LIVE_TEXT = """() => {
  const bubble = document.querySelector('.tool-card ~ .msg.assistant.live .bubble');
  return bubble ? bubble.textContent : null;
}"""


def test_a_reply_streams_visibly_with_tool_cards(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Adder"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("stream the sum of 2 and 3")
    box.press("Enter")

    seen: list[str] = []

    def grown() -> bool:
        text = page.evaluate(LIVE_TEXT)
        if text and page.locator(".composer button.danger").is_visible() and (not seen or text != seen[-1]):
            seen.append(text)
        return len(seen) >= 3

    poll(grown, timeout=15, every=0.02, what="the reply growing while the turn runs")
    assert all(STREAMED.startswith(part) for part in seen), "every partial text is a prefix of the reply"
    assert len(seen[0]) < len(seen[-1]) < len(STREAMED), "the text grew before the turn ended"

    poll(lambda: not page.locator(".composer button.danger").is_visible(), timeout=15, what="the turn's end")
    card = page.locator(".tool-card[data-seq]:not([data-seq=''])")
    card.wait_for()
    assert card.count() == 1
    assert card.locator(".tool-name").inner_text() == "add"
    card.locator("summary").click()
    assert '"a": 2' in card.inner_text() and "5" in card.locator("pre").nth(1).inner_text()
    assert "ms" in card.locator("summary").inner_text(), "the card shows the tool's duration"
    assert page.locator(".msg.assistant .bubble").last.inner_text() == STREAMED


def test_branch_from_here_creates_a_child_shown_live(server: ServerThread, page: Any, browser: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Trip"))
    server.run(agent.turn(root.id, "first question"))
    server.run(agent.turn(root.id, "second question"))
    map_page = browser.new_page()
    try:
        open_ui(map_page, server.url)
        poll(lambda: map_ids(map_page) == {root.id}, what="the root on the map")

        open_ui(page, server.url, f"#/chat/{root.id}")
        first = page.locator(".msg.assistant", has_text="echo: first question")
        branch = first.get_by_role("button", name="Branch from here")
        assert branch.get_attribute("aria-disabled") == "false"
        branch.click()

        child = poll(lambda: _child(server, root.id), what="the branch in the store")
        poll(lambda: page.evaluate("() => location.hash") == f"#/chat/{child}", what="the chat to open the child")
        poll(lambda: page.locator(".msg.assistant .bubble").count() == 1, what="the child's transcript")
        texts = [m.inner_text() for m in page.locator(".msg .bubble").all()]
        assert texts == ["first question", "echo: first question"], "the child's transcript ends at that turn"
        poll(lambda: page.locator(f".tree li[data-id='{root.id}'] li[data-id='{child}']").count() == 1, what="the tree")
        poll(lambda: child in map_ids(map_page), timeout=5, what="the child on the other page's map, without reload")
    finally:
        map_page.close()


def test_branch_is_disabled_on_a_message_of_an_open_turn(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Gated"))
    server.run(agent.turn(session.id, "done already"))
    turn = server.spawn(agent.turn(session.id, "slow one"))
    poll(lambda: _has_event(server, session.id, "tool/call"), what="the open turn's tool call in the log")

    open_ui(page, server.url, f"#/chat/{session.id}")
    open_message = page.locator(".msg.assistant", has_text="Checking the gate.")
    control = open_message.get_by_role("button", name="Branch from here")
    control.wait_for()
    assert control.get_attribute("aria-disabled") == "true"
    assert control.get_attribute("title") == "Available once this turn has completed"
    done = page.locator(".msg.assistant", has_text="echo: done already").get_by_role("button", name="Branch from here")
    assert done.get_attribute("aria-disabled") == "false"

    assert control.is_disabled(), "assistive technology and automation see it as disabled"
    control.click(force=True)
    page.wait_for_timeout(300)
    assert not _child(server, session.id), "a disabled control forks nothing"
    gate("tool").set()
    assert turn.result(15).content == "Gate passed."
    # The page follows the session's log: the turn's end arrives without a reload, and its last message
    # (not the one with the tool call) becomes the branch point.
    last = page.locator(".msg.assistant", has_text="Gate passed.").get_by_role("button", name="Branch from here")
    poll(lambda: last.get_attribute("aria-disabled") == "false", what="the completed turn, live")
    assert control.get_attribute("title") == "Available only on the last message of a completed turn"


def test_model_html_renders_as_text(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Untrusted"))
    dialogs: list[str] = []
    outside: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: outside.append(request.url) if server.url not in request.url else None)
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("xss please")
    box.press("Enter")
    poll(lambda: not page.locator(".composer button.danger").is_visible(), timeout=15, what="the turn's end")
    for attempt in ("streamed", "reloaded"):
        bubble = page.locator(".msg.assistant .bubble").last
        text = bubble.inner_text()
        assert "<img src=x onerror=alert(1)>" in text, attempt
        assert "<script>window.__pwned = 1</script>" in text, attempt
        assert page.locator(".messages img, .messages script").count() == 0, attempt
        assert page.locator(".messages a[href^='javascript']").count() == 0, attempt
        assert bubble.locator("strong").inner_text() == "bold", "markdown still renders"
        assert bubble.locator("a[href='http://example.com/x.png']").inner_text() == "[pic]", "an image is only a link"
        assert page.evaluate("() => window.__pwned") is None, attempt
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        page.locator(".msg.assistant").last.wait_for()
    assert not dialogs, "no script ran"
    assert not outside, f"nothing was fetched from elsewhere: {outside}"


def _child(server: ServerThread, root_id: str) -> str | None:
    node = server.run(server.agents["default"].get_node(root_id))
    return node.children[0].id if node.children else None


def _has_event(server: ServerThread, session_id: str, kind: str) -> bool:
    async def read() -> bool:
        store = await server.agents["default"].store()
        return any(e.type == kind for e in await store.read_events(SessionId(session_id)))

    return server.run(read())


def test_stop_cancels_the_turn_and_enter_waits_for_the_input_method(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Stoppable"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("slow 你好")
    # Enter that confirms an input-method composition (as when typing Chinese) must not send.
    box.dispatch_event("keydown", {"key": "Enter", "isComposing": True, "keyCode": 229})
    page.wait_for_timeout(300)
    assert box.input_value() == "slow 你好" and page.locator(".msg.user").count() == 0
    box.press("Enter")
    page.locator(".tool-card.running").wait_for()
    page.get_by_role("button", name="Stop", exact=True).click()
    page.get_by_text("Stopped: the turn was cancelled.").wait_for()
    assert page.get_by_role("button", name="Stop", exact=True).is_hidden()
    ends = [e for e in _events(server, session.id) if e.type == "turn/end"]
    assert [e.data["reason"] for e in ends] == ["aborted"]


def test_a_session_is_renamed_inline(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Old name"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.get_by_role("button", name="Old name", exact=True).click()
    field = page.get_by_label("New name")
    field.fill("New name")
    field.press("Enter")
    page.locator(".chat-header .rename", has_text="New name").wait_for()
    poll(lambda: server.run(server.agents["default"].get_session_digest(session.id)).label == "New name", what="rename")
    poll(lambda: page.locator(".tree .label", has_text="New name").count() == 1, what="the tree follows")


def test_a_name_being_typed_survives_updates_of_the_tree(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Old name"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.get_by_role("button", name="Old name", exact=True).click()
    field = page.get_by_label("New name")
    field.fill("Half typed")
    server.run(agent.create_session(label="Another"))  # the tree refreshes while the person types
    poll(lambda: page.locator(".tree .label", has_text="Another").count() == 1, what="the tree follows")
    assert field.input_value() == "Half typed"
    field.press("Enter")
    poll(lambda: server.run(agent.get_session_digest(session.id)).label == "Half typed", what="rename")
    page.locator(".chat-header .rename", has_text="Half typed").wait_for()


def _events(server: ServerThread, session_id: str) -> list[Any]:
    async def read() -> list[Any]:
        store = await server.agents["default"].store()
        return list(await store.read_events(SessionId(session_id)))

    return server.run(read())


def test_a_new_session_is_created_from_the_map_and_answers(server: ServerThread, page: Any) -> None:
    open_ui(page, server.url)
    page.get_by_text("No sessions yet").wait_for()
    page.get_by_role("button", name="New session").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Label", exact=True).fill("Fresh start")
    dialog.get_by_label("System prompt", exact=True).fill("You are terse.")
    dialog.get_by_role("button", name="Create").click()
    poll(lambda: page.evaluate("() => location.hash").startswith("#/chat/"), what="the new session's chat")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("hello there")
    box.press("Enter")
    page.locator(".msg.assistant .bubble", has_text="echo: hello there").wait_for()
    (root,) = server.run(server.agents["default"].get_topology())
    assert (root.label, root.turn_count) == ("Fresh start", 1)
