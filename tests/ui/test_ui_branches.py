"""Edit, regenerate, the compare view and the replay view in a real browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import XSS, ServerThread, last_user, map_ids, open_ui, poll

from stellate import Agent
from stellate.llm.scripted import FunctionLLM
from stellate.log.events import make_event
from stellate.store import SessionId

LONG = "please say back these many words so that the reply takes a while to stream out"


class TwoModels(ServerThread):
    """The test server with a second named model, ``other``."""

    def agent_of(self, store: Any, space: str) -> Agent:
        agent = super().agent_of(store, space)
        other = FunctionLLM(lambda request: f"other model: {last_user(request)}", model="other-model")
        agent.registries.adapters["other"] = other
        return agent


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    running = TwoModels(tmp_path / "ui.db").start()
    yield running
    running.stop()


def _hash_id(page: Any, prefix: str) -> str | None:
    found = page.evaluate("() => location.hash")
    return found[len(prefix) :] if found.startswith(prefix) else None


def _bubbles(page: Any) -> list[str]:
    return [m.inner_text() for m in page.locator(".msg .bubble").all()]


def test_edit_runs_the_turn_in_a_sibling_branch_that_opens_streaming(server: ServerThread, page: Any) -> None:
    """Edit on a user message opens a new branch beside the session, its turn streaming; the session keeps its turn."""
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Trip"))
    server.run(agent.turn(root.id, "first question"))
    child = server.run(agent.fork_session(root.id, label="Side", context="inherit"))
    server.run(agent.turn(child.id, "second question"))
    before = server.run(agent.list_messages(child.id))

    open_ui(page, server.url, f"#/chat/{child.id}")
    message = page.locator(".msg.user", has_text="second question")
    message.get_by_role("button", name="Edit").click()
    box = page.get_by_role("textbox", name="Edited message")
    assert box.input_value() == "second question"
    box.fill(LONG)
    page.get_by_role("button", name="Run in a new branch").click()

    branch = poll(
        lambda: (_hash_id(page, "#/chat/") or child.id) != child.id and _hash_id(page, "#/chat/"),
        what="the chat to open the new branch",
    )
    poll(lambda: page.locator(".composer button.danger").is_visible(), timeout=5, what="the turn streaming there")
    poll(lambda: not page.locator(".composer button.danger").is_visible(), timeout=15, what="the turn's end")
    poll(lambda: _bubbles(page)[-2:] == [LONG, f"echo: {LONG}"], what="the edited turn in the branch")
    assert _bubbles(page)[:2] == ["first question", "echo: first question"], "turn 1 is inherited"
    assert server.run(agent.list_messages(child.id)) == before, "the session edited from is untouched"
    digest = server.run(agent.get_session_digest(branch))
    assert digest.parent_id == root.id == child.parent_id, "siblings on the map"
    record = server.run(_record(agent, branch))
    assert record.source_id == child.id and record.inherited > 0
    page.get_by_role("link", name="Map").click()
    poll(lambda: {root.id, child.id, branch} <= map_ids(page), what="both branches on the map")


async def _record(agent: Agent, session_id: str) -> Any:
    return await (await agent.store()).get_session(SessionId(session_id))


def test_regenerate_runs_the_last_turn_again_in_a_new_branch(server: ServerThread, page: Any) -> None:
    """Regenerate on the last reply opens a branch whose last turn has the same question, answered again."""
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Again"))
    server.run(agent.turn(root.id, "one"))
    server.run(agent.turn(root.id, "two"))
    open_ui(page, server.url, f"#/chat/{root.id}")
    reply = page.locator(".msg.assistant", has_text="echo: two")
    reply.wait_for()
    assert page.locator(".msg.assistant", has_text="echo: one").get_by_role("button", name="Regenerate").count() == 1
    reply.get_by_role("button", name="Regenerate").click()
    branch = poll(
        lambda: (_hash_id(page, "#/chat/") or root.id) != root.id and _hash_id(page, "#/chat/"), what="the new branch"
    )
    poll(lambda: _bubbles(page) == ["one", "echo: one", "two", "echo: two"], what="the regenerated turn")
    assert server.run(agent.get_session_digest(branch)).label == "Again · regenerate 2"
    assert server.run(agent.get_session_digest(root.id)).turn_count == 2


def test_the_compare_view_aligns_turns_marks_tools_and_keeps_model_output_as_text(
    server: ServerThread, page: Any
) -> None:
    """Two edits of turn 2: turn 1 folded as shared, turn 2 side by side, the tool call marked, XSS inert."""
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Base"))
    server.run(agent.turn(root.id, "hello"))
    server.run(agent.turn(root.id, "original"))
    left = server.run(agent.edit_turn(root.id, 2, "xss please")).session
    right = server.run(agent.edit_turn(root.id, 2, "stream the sum")).session
    open_ui(page, server.url, f"#/compare/{left.id}/{right.id}")
    row = page.locator(".compare-row[data-turn='2']")
    row.wait_for()
    assert page.locator(".compare-shared summary").inner_text().startswith("1 shared turns")
    assert "differs" in (row.get_attribute("class") or "") and "tool calls differ" in row.inner_text()
    left_cell, right_cell = row.locator(".compare-cell").all()
    assert "add(" in right_cell.locator(".compare-tools").inner_text()
    shown = left_cell.locator(".compare-reply").inner_text()
    assert shown == XSS, "the reply is shown exactly as the model wrote it"
    assert page.locator(".compare-page img, .compare-page script, .compare-page strong").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    sides = page.locator(".compare-side").all()
    assert [s.get_attribute("data-id") for s in sides] == [left.id, right.id]
    assert sides[0].locator(".calls").inner_text().isdigit()
    page.get_by_role("button", name="中文").click()
    poll(lambda: "工具调用不同" in page.locator(".compare-row[data-turn='2']").inner_text(), what="the view in Chinese")


def test_the_replay_view_streams_each_turn_then_opens_the_comparison(server: ServerThread, page: Any) -> None:
    """From the map's panel: Replay…, another model from turn 1, progress per turn, then the compare view."""
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Plan"))
    server.run(agent.turn(root.id, "one"))
    server.run(agent.turn(root.id, "two"))
    open_ui(page, server.url, f"#/map/{root.id}")
    page.get_by_role("button", name="Replay…").click()
    poll(lambda: _hash_id(page, "#/replay/") == root.id, what="the replay view")
    page.get_by_label("From turn").select_option("1")
    page.get_by_label("Model").select_option("other")
    page.get_by_role("button", name="Replay into a new branch").click()
    poll(lambda: page.locator(".replay-step").count() == 2 or _hash_id(page, "#/compare/"), what="progress per turn")
    found = poll(lambda: _hash_id(page, "#/compare/"), timeout=15, what="the comparison to open")
    source, branch = found.split("/")
    assert source == root.id and branch != root.id
    row = page.locator(".compare-row[data-turn='2']")
    row.wait_for()
    assert "other model: two" in row.locator(".compare-cell").nth(1).inner_text()
    assert "echo: two" in row.locator(".compare-cell").nth(0).inner_text()
    assert server.run(agent.get_session_digest(branch)).parent_id == root.id
    assert [m.content for m in server.run(agent.list_messages(root.id))][-1] == "echo: two"


def _logged_turn(turn: int, user: str, reply: str, tokens: tuple[int | None, int], latency: int) -> list[Any]:
    called = {"turn": turn, "step": 1, "provider": "p", "model": "logged-model", "input_tokens": tokens[0],
              "output_tokens": tokens[1], "latency_ms": latency, "ttft_ms": None, "stop_reason": "stop"}  # fmt: skip
    return [
        make_event("turn/start", {"turn": turn}),
        make_event("user/message", {"content": user}),
        make_event("step/start", {"turn": turn, "step": 1}),
        make_event("assistant/message", {"content": reply, "tool_calls": []}),
        make_event("model/called", called),
        make_event("step/end", {"turn": turn, "step": 1}),
        make_event("turn/end", {"turn": turn, "reason": "completed"}),
    ]


async def _logged_pair(agent: Agent) -> tuple[str, str]:
    store = await agent.store()
    turns = [*_logged_turn(1, "q1", "a1", (10, 4), 100), *_logged_turn(2, "q2", "a2", (20, 6), 250)]
    a = await store.create_session(events=[make_event("session/created", {"label": "Logged A"}), *turns])
    b = await store.create_session(
        events=[make_event("session/created", {"label": "Logged B"}), *_logged_turn(1, "q1", "b1", (None, 5), 80)]
    )
    return a.id, b.id


def test_the_compare_view_shows_totals_and_unknown_tokens(server: ServerThread, page: Any) -> None:
    """Totals per side come from the model calls in the log; a provider that sent no tokens shows as unknown."""
    a, b = server.run(_logged_pair(server.agents["default"]))
    open_ui(page, server.url, f"#/compare/{a}/{b}")
    page.locator(".compare-side").first.wait_for()
    left, right = page.locator(".compare-side").all()
    assert left.locator(".calls").inner_text() == "2" and left.locator(".tokens").inner_text() == "30 in / 10 out"
    assert left.locator(".latency").inner_text() == "350 ms"
    assert right.locator(".tokens").inner_text() == "unknown"
    assert page.locator(".compare-shared summary").inner_text() == "No common ancestor: nothing is shared"
    assert "1 calls, 100 ms" in page.locator(".compare-row[data-turn='1'] .turn-usage").first.inner_text()
    assert page.locator(".compare-row[data-turn='2'] .compare-cell.missing").inner_text() == "(no such turn)"
