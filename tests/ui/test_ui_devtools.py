"""The devtools' small things in a real browser: Reflect without a reflector, a failed reflection under Errors,
the served model on Settings, Fork opening the child, same labels told apart, own and inherited turns, the
thinking indicator, and the CJK font stack."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import ServerThread, gate, map_ids, open_ui, poll

from stellate.agent import Reflector
from stellate.errors import ProviderError
from stellate.llm.openai import OpenAIAdapter
from stellate.llm.scripted import FunctionLLM
from stellate.llm.types import LLMRequest


def _refuse(request: LLMRequest) -> str:
    raise ProviderError("the reflector's model is down", provider="scripted")


@pytest.fixture
def bare_server(tmp_path: Path) -> Iterator[ServerThread]:
    """A server whose agents have no reflector."""
    running = ServerThread(tmp_path / "bare.db")
    running.with_reflector = False
    yield running.start()
    running.stop()


def test_reflect_is_disabled_with_a_hint_when_no_reflector_is_configured(bare_server: ServerThread, page: Any) -> None:
    open_ui(page, bare_server.url)
    button = page.get_by_role("button", name="Reflect")
    poll(lambda: button.is_disabled(), what="the disabled Reflect")
    hint = page.locator(".reflect-hint")
    assert hint.is_visible() and "--reflector" in hint.inner_text()
    assert button.get_attribute("aria-describedby") == "reflect-hint"
    page.evaluate("() => localStorage.setItem('stellate.lang', 'zh')")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    poll(lambda: page.locator(".reflect-hint").is_visible(), what="the hint in Chinese")
    assert "未配置反思器" in page.locator(".reflect-hint").inner_text()


def test_a_failed_reflection_shows_under_errors_also_after_a_reload(tmp_path: Path, page: Any) -> None:
    server = ServerThread(tmp_path / "failing.db", reflector=Reflector(FunctionLLM(_refuse))).start()
    try:
        server.run(server.agents["default"].create_session(label="Branch"))
        open_ui(page, server.url)
        page.get_by_role("button", name="Reflect").click()
        poll(lambda: "the reflector's model is down" in page.locator(".toast.error").inner_text(), what="the toast")
        page.goto(f"{server.url}/#/events")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        page.get_by_role("button", name="Errors").click()
        rows = page.locator(".event-list li.event")
        poll(lambda: rows.count() == 1, what="the reflection's error after a reload")
        assert "reflector · provider_error" in rows.first.inner_text()
        assert "the reflector's model is down" in rows.first.inner_text()
    finally:
        server.stop()


def test_settings_show_the_served_provider_model_base_url_and_reflector(tmp_path: Path, page: Any) -> None:
    server = ServerThread(tmp_path / "settings.db")
    server.llm = OpenAIAdapter("qwen2.5-7b", base_url="http://127.0.0.1:9/v1", api_key="unused")
    server.start()
    try:
        open_ui(page, server.url, "#/settings")
        models = page.locator(".settings-page")
        poll(lambda: "qwen2.5-7b" in models.locator(".default-model").inner_text(), what="the model")
        assert models.locator(".default-model").inner_text().endswith("openai · qwen2.5-7b")
        assert "http://127.0.0.1:9/v1" in models.locator(".base-url").inner_text()
        facts = models.locator("table.facts").last.inner_text()
        assert "Reflector model\tfunction · function-model\nReflector prompt\tbuilt-in\n" in facts
        assert "Scheduled reflection\ton request only" in facts
    finally:
        server.stop()


def test_fork_from_the_map_opens_the_child(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Plan"))
    server.run(agent.turn(root.id, "hello"))
    open_ui(page, server.url, f"#/map/{root.id}")
    page.locator(".panel").get_by_role("button", name="Fork…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Label", exact=True).fill("Plan B")
    dialog.get_by_role("button", name="Create branch").click()
    poll(lambda: page.evaluate("() => location.hash").startswith("#/chat/s-"), what="the child's conversation")
    child = page.evaluate("() => decodeURIComponent(location.hash.slice('#/chat/'.length))")
    assert child != root.id
    poll(lambda: page.locator(".chat-header h1").inner_text() == "Plan B", what="the child's header")
    assert page.locator(".chat-header .turns").inner_text() == "0 own · 1 inherited"


def test_same_labels_are_told_apart_and_own_turns_from_inherited(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    first = server.run(agent.create_session(label="Study abroad plan"))
    second = server.run(agent.create_session(label="Study abroad plan"))
    server.run(agent.turn(first.id, "one"))
    server.run(agent.turn(first.id, "two"))
    fork = server.run(agent.fork_session(first.id, label="Budget", context="inherit"))
    server.run(agent.turn(fork.id, "three"))
    open_ui(page, server.url)
    poll(lambda: map_ids(page) == {first.id, second.id, fork.id}, what="three sessions on the map")
    page.get_by_role("button", name="List view").click()
    names = [b.inner_text() for b in page.locator(".session-list button").all()]
    told_apart = r"Study abroad plan · \d+ s ago · …"  # the age, then the tail of the id
    assert re.fullmatch(told_apart + first.id[-4:], names[0]) and re.fullmatch(told_apart + second.id[-4:], names[2])
    assert names[1] == "Budget", "a label of its own stays plain"
    row = page.locator(f".session-list li[data-id='{fork.id}']")
    assert "1 own · 2 inherited" in row.inner_text()

    page.goto(f"{server.url}/#/chat/{fork.id}")
    tree = page.locator(".tree")
    poll(lambda: tree.locator(".distinction").count() == 2, what="the sidebar's distinctions")
    assert {d.inner_text()[-4:] for d in tree.locator(".distinction").all()} == {first.id[-4:], second.id[-4:]}
    count = tree.locator(f"li[data-id='{fork.id}'] > .tree-row .count")
    assert count.inner_text() == "1" and count.get_attribute("title") == "1 own · 2 inherited"

    page.goto(f"{server.url}/#/inspect/{fork.id}")
    page.get_by_role("combobox", name="Session").click()
    options = page.locator(".session-picker li[role=option] .label")
    poll(lambda: options.count() == 3, what="the picker's options")
    texts = [o.inner_text() for o in options.all()]
    assert sum(1 for x in texts if x.startswith("Study abroad plan · ")) == 2
    poll(lambda: "1 own · 2 inherited" in page.locator(".inspector").inner_text(), what="the inspector's turns")


def test_the_conversation_shows_it_thinks_until_the_first_token(server: ServerThread, page: Any) -> None:
    session = server.run(server.agents["default"].create_session(label="Ponder"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.locator(".composer textarea").fill("think about it")
    page.get_by_role("button", name="Send").click()
    thinking = page.locator(".msg.thinking")
    thinking.wait_for(state="visible")
    assert thinking.inner_text() == "Thinking…" and thinking.get_attribute("role") == "status"
    gate("think").set()
    poll(lambda: "Thought it through." in page.locator(".messages").inner_text(), what="the reply")
    assert thinking.count() == 0


def test_the_ui_names_the_common_cjk_system_fonts(server: ServerThread, page: Any) -> None:
    open_ui(page, server.url)
    stack = page.evaluate("() => getComputedStyle(document.body).fontFamily")
    for font in ("PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "Noto Sans CJK SC", "Source Han Sans SC"):
        assert font in stack
    assert "WenQuanYi Micro Hei" in stack
