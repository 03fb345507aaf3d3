"""Images in a real browser: picked or pasted in the composer, uploaded to our server, shown as thumbnails in the
conversation and the inspector; with keys too (the bytes come from this server only, under the page's CSP)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_support import ServerThread, open_ui, poll

from stellate.server.keys import KeyRing
from stellate.store import SessionId
from stellate.testing.images import png

RED = png(8, 6, (220, 30, 30))
DECODED = """(selector) => [...document.querySelectorAll(selector)].map((img) => [img.naturalWidth, img.naturalHeight,
  img.src.slice(0, 22)])"""


def user_images(server: ServerThread, session_id: str) -> list[Any]:
    events = server.run(server.agents["default"].store()).read_events(SessionId(session_id), types=["user/message"])
    return [e.data.get("images") for e in server.run(events)]


def test_an_image_picked_in_the_composer_is_sent_and_shown_as_a_thumbnail(
    server: ServerThread, page: Any, tmp_path: Path
) -> None:
    """The file input adds a preview chip; Send uploads it, the turn refers to it, the bubble shows it decoded."""
    (tmp_path / "red.png").write_bytes(RED)
    session = server.run(server.agents["default"].create_session(label="Look"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.locator(".composer input[type=file]").set_input_files(str(tmp_path / "red.png"))
    poll(lambda: page.locator(".thumbs.pending .chip").count() == 1, what="the preview chip")
    box = page.get_by_role("textbox", name="Message (Enter to send, Shift+Enter for a new line)")
    box.fill("what colour is this?")
    box.press("Enter")
    poll(
        lambda: page.locator(".msg.assistant .bubble", has_text="echo: what colour is this?").count() == 1,
        timeout=15,
        what="the reply",
    )
    poll(
        lambda: page.evaluate(DECODED, ".msg.user img.thumb") == [[8, 6, "data:image/png;base64,"]],
        what="the thumbnail decoded in the user's bubble",
    )
    assert page.locator(".thumbs.pending .chip").count() == 0, "the picker is empty after sending"
    sha = hashlib.sha256(RED).hexdigest()
    assert [[i["sha256"] for i in images] for images in user_images(server, session.id)] == [[sha]]


def test_a_pasted_image_is_attached_and_a_pasted_non_image_is_refused(server: ServerThread, page: Any) -> None:
    """Pasting an image file into the message adds it; a pasted text file is refused with a toast."""
    session = server.run(server.agents["default"].create_session(label="Paste"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.evaluate(
        """([data]) => {
          const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
          const paste = (file) => {
            const transfer = new DataTransfer();
            transfer.items.add(file);
            document.querySelector('.composer textarea')
              .dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
          };
          paste(new File([bytes], 'shot.png', { type: 'image/png' }));
          paste(new File(['hello'], 'notes.txt', { type: 'text/plain' }));
        }""",
        [base64.b64encode(RED).decode()],
    )
    poll(lambda: page.locator(".thumbs.pending .chip").count() == 1, what="one pasted image attached")
    poll(lambda: "notes.txt is not a PNG" in page.locator("body").inner_text(), what="the refusal of the text file")
    page.locator(".thumbs.pending .remove").click()
    assert page.locator(".thumbs.pending .chip").count() == 0


def test_the_inspector_shows_the_images_the_model_received(server: ServerThread, page: Any) -> None:
    """The context of a past call lists the user message with its image as a thumbnail."""
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Inspect"))
    server.run(agent.turn(session.id, "describe it", images=[RED]))
    open_ui(page, server.url, f"#/inspect/{session.id}")
    poll(
        lambda: page.evaluate(DECODED, ".ctx-msg.user img.thumb") == [[8, 6, "data:image/png;base64,"]],
        what="the thumbnail in the inspected context",
    )


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[ServerThread, str]]:
    ring = KeyRing(tmp_path / "keys.json")
    alpha = ring.create("alpha")[1]
    running = ServerThread(tmp_path / "keyed.db", keys=ring).start()
    yield running, alpha
    running.stop()


def test_with_keys_thumbnails_load_with_the_tabs_key(keyed: tuple[ServerThread, str], browser: Any) -> None:
    """An image sent over REST in a keyed space shows in the signed-in tab (an <img> could not send the key)."""
    server, alpha = keyed
    auth = {"Authorization": f"Bearer {alpha}"}
    made = httpx.post(f"{server.url}/v1/sessions", json={"label": "Keyed"}, headers=auth).json()
    body = {"content": "look", "images": [{"data": base64.b64encode(RED).decode()}]}
    assert httpx.post(f"{server.url}/v1/sessions/{made['id']}/turns", json=body, headers=auth, timeout=20).is_success
    page = browser.new_context().new_page()
    try:
        page.goto(f"{server.url}/#/chat/{made['id']}")
        dialog = page.get_by_role("dialog", name="API key needed")
        dialog.get_by_label("API key").fill(alpha)
        dialog.get_by_role("button", name="Connect").click()
        page.wait_for_selector("body[data-ready=true]", timeout=15000)
        poll(
            lambda: page.evaluate(DECODED, ".msg.user img.thumb") == [[8, 6, "data:image/png;base64,"]],
            what="the thumbnail loaded with the key",
        )
    finally:
        page.context.close()
