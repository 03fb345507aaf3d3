"""The inspector in a real browser: the context of a past call is exactly what the model received."""

from __future__ import annotations

from typing import Any

import httpx
from ui_support import ServerThread, open_ui, poll

from stellate import ForkOptions
from stellate.llm.types import LLMRequest
from stellate.store import SessionId


def test_the_inspector_shows_the_context_the_model_received(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Audited", system_prompt="You add numbers."))
    server.run(agent.put_insight(session.id, "The user prefers short answers."))
    first = len(server.llm.requests)
    server.run(agent.turn(session.id, "hello there"))
    server.run(agent.turn(session.id, "stream 2 + 3"))
    received = server.llm.requests[first:]
    assert len(received) == 3, "one call for the first turn, two (tool, then answer) for the second"

    open_ui(page, server.url, f"#/inspect/{session.id}")
    calls = page.get_by_label("Model call")
    poll(lambda: calls.locator("option").count() == 3, what="the three calls")
    for index, request in enumerate(received):
        calls.select_option(index=index)
        step = calls.input_value()
        poll(lambda step=step: f"seq {step} " in page.locator(".context").inner_text(), what=f"call {index + 1}")
        assert _shown(page) == _sent(request), f"call {index + 1}"
    tools = {t.inner_text() for t in page.locator(".ctx-tools summary strong").all()}
    assert tools == {tool.name for tool in received[-1].tools}

    insight = page.locator(".context pre.slot").nth(1)
    calls.select_option(index=0)
    poll(lambda: "short answers" in insight.inner_text(), what="the insight the first call consumed")


def test_the_raw_log_marks_inherited_events_and_filters_by_type(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Source", system_prompt="Shared prompt."))
    server.run(agent.turn(root.id, "one"))
    child = server.run(agent.fork_session(root.id, label="Child", context="inherit"))
    server.run(agent.turn(child.id, "two"))
    open_ui(page, server.url, f"#/inspect/{child.id}")
    rows = page.locator(".events-table tbody tr")
    poll(lambda: rows.count() > 0, what="the log")
    inherited = {r.get_attribute("data-seq") for r in page.locator(".events-table tr.inherited").all()}
    detail = server.run(_detail(server, child.id))
    assert inherited == {str(seq) for seq in range(detail)}, "exactly the events read from the source"
    page.get_by_label("Type").select_option("user/message")
    assert [r.get_attribute("data-type") for r in rows.all()] == ["user/message", "user/message"]
    lineage = page.locator(".lineage")
    assert "Source" in lineage.inner_text() and "forked at seq" in lineage.inner_text()
    origin = page.locator("table.config td[data-key=system_prompt]")
    poll(lambda: origin.inner_text() == "parent", what="where the prompt came from")

    options = ForkOptions(label="Critic", profile="critic", profile_vars={"topic": "rent"})
    critic = server.run(agent.fork_session(root.id, options))
    page.evaluate("(route) => { location.hash = route; }", f"#/inspect/{critic.id}")
    poll(lambda: origin.count() and origin.inner_text() == "profile “critic”", what="the profile's prompt")
    assert page.locator("table.config td[data-key=profile]").inner_text() == "fork options"


async def _detail(server: ServerThread, session_id: str) -> int:
    store = await server.agents["default"].store()
    return (await store.get_session(SessionId(session_id))).inherited


def _shown(page: Any) -> list[tuple[str, str]]:
    return [
        (m.get_attribute("data-role") or "", m.locator("pre.content").inner_text())
        for m in page.locator(".ctx-messages > li").all()
    ]


def _sent(request: LLMRequest) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in request.messages]


def test_slots_are_edited_in_the_inspector(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Editable", system_prompt="Be brief."))
    open_ui(page, server.url, f"#/inspect/{session.id}")
    for name, value in (
        ("System prompt", "Be thorough."),
        ("Memory", "Decided: Lisbon."),
        ("Pending insight", "Rent fell."),
    ):
        editor = page.locator(".slot-editor", has=page.get_by_label(name, exact=True))
        editor.get_by_label(name, exact=True).fill(value)
        editor.get_by_role("button", name="Save").click()
        editor.get_by_text("Saved").wait_for()
    detail = httpx.get(f"{server.url}/v1/sessions/{session.id}").json()
    assert (detail["system_prompt"], detail["memory"], detail["insight"]) == (
        "Be thorough.",
        "Decided: Lisbon.",
        "Rent fell.",
    )
