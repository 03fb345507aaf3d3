"""What each model call cost: the price table, per-turn and per-session totals, forks, and the context window."""

from __future__ import annotations

import pytest

from stellate import Agent, tool
from stellate.agent import Price
from stellate.agent.prices import call_cost, merge_prices, parse_price, sum_costs
from stellate.errors import UsageError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.llm.types import Usage
from stellate.log.usage import CallUsage
from stellate.store.memory import MemoryStore
from stellate.sync import SyncAgent


def call(model: str = "m", provider: str = "p", tokens: tuple[int | None, int | None] = (1000, 500)) -> CallUsage:
    return CallUsage(
        turn=1,
        step=1,
        provider=provider,
        model=model,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        latency_ms=1,
        ttft_ms=None,
        stop_reason="stop",
    )


def replies(*pairs: tuple[int, int]) -> list[Reply]:
    return [Reply(text=f"r{i}", usage=Usage(input_tokens=a, output_tokens=b)) for i, (a, b) in enumerate(pairs)]


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "found"


# -- the price table -------------------------------------------------------------------------------


def test_cost_is_tokens_times_price_per_million() -> None:
    prices = {"m": Price(input=2.0, output=8.0)}
    assert call_cost(prices, call()) == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)


def test_provider_qualified_price_wins_over_the_bare_model_name() -> None:
    prices = {"m": Price(input=1.0, output=1.0), "p/m": Price(input=3.0, output=0.0)}
    assert call_cost(prices, call()) == pytest.approx(0.003)
    assert call_cost(prices, call(provider="other")) == pytest.approx(0.0015)


def test_cost_is_unknown_without_a_price_or_without_tokens_never_zero() -> None:
    prices = {"m": Price(input=1.0, output=1.0)}
    assert call_cost(prices, call(model="unpriced")) is None
    assert call_cost(prices, call(tokens=(None, 5))) is None
    assert call_cost({}, call()) is None


def test_a_sum_of_costs_is_unknown_as_soon_as_one_is_and_for_no_calls() -> None:
    assert sum_costs([0.5, 0.25]) == 0.75
    assert sum_costs([0.5, None, 0.25]) is None
    assert sum_costs([]) is None
    assert sum_costs([0.0]) == 0.0  # a free model costs 0: known


def test_a_price_flag_reads_model_equals_input_comma_output() -> None:
    assert parse_price("gpt-4o-mini=0.15,0.6") == ("gpt-4o-mini", Price(input=0.15, output=0.6))
    assert parse_price("org/model=v1=1,2") == ("org/model=v1", Price(input=1.0, output=2.0))
    for bad in ("m=1", "=1,2", "m=a,b", "m=-1,2", "m=nan,1", "m"):
        with pytest.raises(UsageError) as info:
            parse_price(bad)
        assert info.value.code == "config_invalid"
    assert merge_prices({"a": Price(input=1, output=1)}, {"a": Price(input=2, output=2)})["a"].input == 2


# -- the report ------------------------------------------------------------------------------------


async def test_report_has_a_row_per_call_and_totals_per_turn_and_session() -> None:
    llm = ScriptedLLM(
        [
            Reply(tool_calls=[tool_call("lookup", {"q": "x"})], usage=Usage(input_tokens=100)),
            *replies((120, 30), (200, 40)),
        ]
    )
    async with Agent(MemoryStore(), llm=llm, tools=[lookup], prices={"scripted-model": Price(input=1, output=2)}) as a:
        session = await a.create_session()
        await a.turn(session.id, "one")
        await a.turn(session.id, "two")
        report = await a.usage_report(session.id)
    assert [(r.usage.turn, r.usage.step) for r in report.calls] == [(1, 1), (1, 2), (2, 1)]
    assert [r.cost for r in report.calls] == pytest.approx([100e-6, 180e-6, 280e-6])
    assert [(t.turn, t.totals.calls, t.totals.input_tokens, t.totals.output_tokens) for t in report.turns] == [
        (1, 2, 220, 30),
        (2, 1, 200, 40),
    ]
    assert report.turns[0].cost == pytest.approx(280e-6)
    assert (report.own.calls, report.own.input_tokens, report.own.output_tokens) == (3, 420, 70)
    assert report.own_cost == pytest.approx(560e-6)
    assert report.inherited.calls == 0 and report.inherited_cost is None
    assert all(r.reply_seq is not None and r.reply_seq < r.seq for r in report.calls)


async def test_a_call_without_usage_makes_its_turn_and_the_session_unknown() -> None:
    llm = ScriptedLLM(["first", *replies((10, 5))], estimate_usage=False)
    async with Agent(MemoryStore(), llm=llm, prices={"scripted-model": Price(input=1, output=1)}) as agent:
        session = await agent.create_session()
        await agent.turn(session.id, "one")
        await agent.turn(session.id, "two")
        report = await agent.usage_report(session.id)
    assert [(r.usage.input_tokens, r.cost) for r in report.calls] == [(None, None), (10, pytest.approx(15e-6))]
    assert report.turns[0].totals.input_tokens is None and report.turns[0].cost is None
    assert report.turns[1].totals.input_tokens == 10
    assert report.own.input_tokens is None and report.own_cost is None and report.own.calls == 2


async def test_a_forks_inherited_calls_belong_to_its_source() -> None:
    """A child shows its source's calls as inherited; its own total counts only the calls it made."""
    llm = ScriptedLLM(replies((10, 1), (20, 2), (40, 4)))
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "one")
        await agent.turn(root.id, "two")
        child = await agent.fork_session(root.id, label="branch", context="inherit")
        await agent.turn(child.id, "three")
        report = await agent.usage_report(child.id)
        source = await agent.usage_report(root.id)
    assert [(r.usage.input_tokens, r.inherited) for r in report.calls] == [(10, True), (20, True), (40, False)]
    assert [t.inherited for t in report.turns] == [True, True, False]
    assert (report.own.calls, report.own.input_tokens) == (1, 40)
    assert (report.inherited.calls, report.inherited.input_tokens) == (2, 30)
    assert (source.own.calls, source.own.input_tokens) == (2, 30)


# -- the context window ----------------------------------------------------------------------------


async def test_context_window_splits_a_past_call_into_its_parts() -> None:
    llm = ScriptedLLM(["a", Reply(text="b", usage=Usage(input_tokens=77, output_tokens=1))], max_context_tokens=4000)
    async with Agent(MemoryStore(), llm=llm, tools=[lookup]) as agent:
        session = await agent.create_session(label="Trip", system_prompt="You plan trips.")
        await agent.turn(session.id, "first question")
        await agent.put_insight(session.id, "mind the budget")
        await agent.turn(session.id, "second question")
        report = await agent.usage_report(session.id)
        first = await agent.context_window(session.id, report.calls[0].reply_seq)
        last = await agent.context_window(session.id)
    assert [p.name for p in first.parts] == ["system_prompt", "identity", "history", "tools"]
    assert [p.name for p in last.parts] == ["system_prompt", "identity", "insight", "history", "tools"]
    history = {p.name: p for p in last.parts}["history"]
    assert history.messages == 3 and history.tokens > {p.name: p for p in first.parts}["history"].tokens
    assert last.total_tokens == sum(p.tokens for p in last.parts) and all(p.tokens > 0 for p in last.parts)
    assert (last.window, last.threshold, last.reported_input_tokens) == (4000, 3200, 77)
    assert last.reply_seq == report.calls[1].reply_seq and last.model == "scripted-model"


async def test_context_window_refuses_a_seq_that_is_no_model_call() -> None:
    async with Agent(MemoryStore(), llm=ScriptedLLM(["a"])) as agent:
        session = await agent.create_session()
        with pytest.raises(UsageError, match="no model call yet"):
            await agent.context_window(session.id)
        await agent.turn(session.id, "q")
        with pytest.raises(UsageError, match="not an assistant message"):
            await agent.context_window(session.id, 1)


def test_sync_facade_reads_usage_and_context_window() -> None:
    with SyncAgent(MemoryStore(), llm=ScriptedLLM(replies((5, 6)))) as agent:
        session = agent.create_session()
        agent.turn(session.id, "q")
        report = agent.usage_report(session.id)
        window = agent.context_window(session.id)
    assert (report.own.input_tokens, report.own.output_tokens) == (5, 6)
    assert window.reported_input_tokens == 5 and window.parts[-1].name == "history"
