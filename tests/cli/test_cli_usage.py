"""``stellate sessions usage`` and the chat's usage line: tokens, latency and cost, with unknowns shown as —."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from cli_support import Run

from stellate import Agent
from stellate.cli.exit_codes import EXIT_STATUS
from stellate.llm.scripted import Reply, ScriptedLLM
from stellate.llm.types import Usage


@pytest.fixture
def tree(db: Path) -> tuple[str, str]:
    """A root with a known-usage turn, a child forked from it with one turn whose usage is unknown."""

    async def build() -> tuple[str, str]:
        llm = ScriptedLLM(
            [Reply(text="a", usage=Usage(input_tokens=2000, output_tokens=300)), "b"], estimate_usage=False
        )
        async with Agent(f"sqlite:///{db}", llm=llm) as agent:
            root = await agent.create_session(label="Root")
            await agent.turn(root.id, "one")
            child = await agent.fork_session(root.id, label="Child", context="inherit")
            await agent.turn(child.id, "two")
            return root.id, child.id

    return asyncio.run(build())


def test_usage_prints_each_call_and_the_total_priced_by_the_flag(cli: Run, tree: tuple[str, str]) -> None:
    root, _ = tree
    result = cli("sessions", "usage", root, "--price", "scripted-model=1,10")
    assert result.status == 0, result.err
    assert re.search(r"2,000\s+300\s+\d+ ms\s+\d+ ms\s+stop\s+0\.005", result.out), result.out
    assert "total: 1 call, 2,000 in / 300 out tokens" in result.out and "cost 0.005" in result.out


def test_a_forks_inherited_calls_are_shown_apart_and_unknowns_are_dashes(cli: Run, tree: tuple[str, str]) -> None:
    _, child = tree
    result = cli("sessions", "usage", child, "--price", "scripted-model=1,10")
    assert result.status == 0, result.err
    assert "1 (inherited)" in result.out
    assert "total: 1 call, — in / — out tokens" in result.out and "cost —" in result.out
    assert "inherited from the source (not in the total): 1 call, 2,000 in / 300 out tokens" in result.out
    assert " 0 in " not in result.out


def test_prices_come_from_the_config_file_and_a_flag_wins(cli: Run, tree: tuple[str, str], tmp_path: Path) -> None:
    root, _ = tree
    config = tmp_path / "config.toml"
    config.write_text('[prices."scripted-model"]\ninput = 2.0\noutput = 20.0\n')
    assert "cost 0.01\n" in cli("sessions", "usage", root, "--config", str(config)).out
    flagged = cli("sessions", "usage", root, "--config", str(config), "--price", "scripted-model=1,10")
    assert "cost 0.005\n" in flagged.out
    unpriced = cli("sessions", "usage", root)
    assert "cost —" in unpriced.out


def test_a_bad_price_is_a_config_error(cli: Run, tree: tuple[str, str], tmp_path: Path) -> None:
    root, _ = tree
    result = cli("sessions", "usage", root, "--price", "scripted-model=cheap")
    assert result.status == EXIT_STATUS["config_invalid"] and "MODEL=INPUT,OUTPUT" in result.err
    config = tmp_path / "bad.toml"
    config.write_text('[prices."m"]\ninput = -1\noutput = 1\n')
    refused = cli("sessions", "usage", root, "--config", str(config))
    assert refused.status == EXIT_STATUS["config_invalid"] and "prices.m.input" in refused.err


def test_chat_prints_a_usage_line_after_each_turn(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    result = cli("chat", "--price", "scripted-model=1000000,0", stdin="hello\n/quit\n")
    assert result.status == 0, result.err
    line = re.search(r"1 call, (\d+) in / (\d+) out tokens, \d+ ms, cost (\S+)", result.out)
    assert line is not None, result.out
    assert float(line.group(3)) == int(line.group(1))  # a million per million input tokens: one per token
