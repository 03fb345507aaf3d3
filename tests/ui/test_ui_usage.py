"""Cost and context in a real browser: a usage line under each reply, totals in the inspector, the window bar."""

from __future__ import annotations

from typing import Any

from ui_support import ServerThread, open_ui, poll

from stellate import SessionConfig
from stellate.agent import Price
from stellate.llm.scripted import FunctionLLM, Reply
from stellate.llm.types import LLMRequest, Usage


def counted(request: LLMRequest) -> Reply:
    return Reply(text="Counted answer.", usage=Usage(input_tokens=1234, output_tokens=56))


def test_each_reply_shows_its_tokens_latency_and_cost(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    agent.prices = {"counted-model": Price(input=1000.0, output=1000.0)}
    llm = FunctionLLM(counted, model="counted-model", provider="scripted")
    session = server.run(agent.create_session(label="Priced", config=SessionConfig(llm=llm)))
    server.run(agent.turn(session.id, "one"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    line = page.locator(".msg.assistant .usage-line")
    poll(lambda: line.count() == 1, what="the usage line")
    text = line.inner_text()
    assert "counted-model" in text and "1,234 in" in text and "56 out" in text, text
    assert "cost 1.29" in text and "first token" in text and " ms" in text, text  # (1234 + 56) * 1000 / 1e6


def test_unknown_usage_shows_dashes_never_zero(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    quiet = FunctionLLM(lambda request: "No usage sent.", model="quiet-model", estimate_usage=False)
    session = server.run(agent.create_session(label="Quiet", config=SessionConfig(llm=quiet)))
    server.run(agent.turn(session.id, "one"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    line = page.locator(".msg.assistant .usage-line")
    poll(lambda: line.count() == 1, what="the usage line")
    text = line.inner_text()
    assert "— in" in text and "— out" in text and "cost —" in text, text
    assert "0 in" not in text and "0 out" not in text


def test_a_turn_of_several_calls_shows_its_total_and_a_turn_run_elsewhere_gets_its_line(
    server: ServerThread, page: Any
) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Tools"))
    server.run(agent.turn(session.id, "stream 2 + 3"))  # a tool call, then the answer: two calls
    open_ui(page, server.url, f"#/chat/{session.id}")
    lines = page.locator(".msg.assistant .usage-line")
    poll(lambda: lines.count() == 2, what="a line under both replies")
    assert "turn of 2 calls" in lines.nth(1).inner_text() and "turn of" not in lines.nth(0).inner_text()
    server.run(agent.turn(session.id, "again"))  # written by another writer: the page tails the log
    poll(lambda: lines.count() == 3, what="the line of the turn run elsewhere")


def test_the_context_window_bar_shows_each_part_against_the_window(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    session = server.run(agent.create_session(label="Windowed", system_prompt="You add numbers."))
    server.run(agent.put_insight(session.id, "Keep it short."))
    server.run(agent.turn(session.id, "hello"))
    open_ui(page, server.url, f"#/chat/{session.id}")
    page.get_by_role("button", name="Context window").click()
    bar = page.locator(".ctx-window .ctx-bar")
    bar.wait_for()
    parts = [s.get_attribute("data-part") for s in bar.locator(".ctx-seg").all()]
    assert parts == ["system_prompt", "identity", "insight", "history", "tools"]
    expected = server.run(agent.context_window(session.id))
    shown = {s.get_attribute("data-part"): int(s.get_attribute("data-tokens")) for s in bar.locator(".ctx-seg").all()}
    assert shown == {p.name: p.tokens for p in expected.parts}
    widths = page.evaluate(
        "() => [...document.querySelectorAll('.ctx-bar .ctx-seg')].map((s) => s.getBoundingClientRect().width)"
    )
    full = page.evaluate("() => document.querySelector('.ctx-bar').getBoundingClientRect().width")
    assert abs(sum(widths) - full * expected.total_tokens / expected.window) < 4, (widths, full)
    marker = page.evaluate(
        "() => { const b = document.querySelector('.ctx-bar').getBoundingClientRect();"
        " const m = document.querySelector('.ctx-threshold').getBoundingClientRect();"
        " return (m.left - b.left) / b.width; }"
    )
    assert abs(marker - expected.threshold / expected.window) < 0.01
    assert f"{expected.total_tokens:,} of {expected.window:,} tokens" in page.locator(".ctx-total").inner_text()


def test_the_inspector_shows_session_totals_and_the_window_of_the_chosen_call(server: ServerThread, page: Any) -> None:
    agent = server.agents["default"]
    root = server.run(agent.create_session(label="Source"))
    server.run(agent.turn(root.id, "one"))
    child = server.run(agent.fork_session(root.id, label="Child", context="inherit"))
    server.run(agent.turn(child.id, "two"))
    report = server.run(agent.usage_report(child.id))
    open_ui(page, server.url, f"#/inspect/{child.id}")
    own = page.locator(".usage-totals tr[data-total=own]")
    own.wait_for()
    assert own.locator("td").first.inner_text() == "1"
    assert page.locator(".usage-totals tr[data-total=inherited] td").first.inner_text() == "1"
    assert f"{report.own.input_tokens:,}" in own.inner_text()
    assert page.locator(".usage-turns tbody tr").count() == 2
    assert page.locator(".usage-turns tr.inherited").count() == 1
    assert "No price table is set" in page.locator(".usage-summary").inner_text()
    page.locator(".context .ctx-bar").wait_for()
    calls = page.get_by_label("Model call")
    calls.select_option(index=0)
    poll(lambda: page.locator(".context .ctx-window").get_attribute("data-seq") == calls.input_value(), what="call 1")
