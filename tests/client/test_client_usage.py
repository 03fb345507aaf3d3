"""`Client.usage_report` and `Client.context_window` return what the local `Agent` returns, over HTTP."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import httpx
import pytest
from client_support import running_in_thread

from stellate import Agent
from stellate.agent import Price
from stellate.agent.usage_report import UsageReport
from stellate.client import Client, SyncClient
from stellate.errors import NotFoundError
from stellate.llm.scripted import Reply, ScriptedLLM
from stellate.llm.types import Usage
from stellate.server import create_app
from stellate.store.memory import MemoryStore

PRICES = {"scripted-model": Price(input=1.0, output=4.0)}


def llm() -> ScriptedLLM:
    script = [Reply(text="a", usage=Usage(input_tokens=40, output_tokens=4)), "no usage"]
    return ScriptedLLM(script, default="later", estimate_usage=False)


def zero_timings(report: UsageReport) -> UsageReport:
    """Latency is measured per run: compare everything else."""
    calls = [dataclasses.replace(c, usage=dataclasses.replace(c.usage, latency_ms=0, ttft_ms=0)) for c in report.calls]
    turns = [dataclasses.replace(t, totals=dataclasses.replace(t.totals, latency_ms=0)) for t in report.turns]
    return dataclasses.replace(
        report,
        session_id="",
        calls=calls,
        turns=turns,
        own=dataclasses.replace(report.own, latency_ms=0),
        inherited=dataclasses.replace(report.inherited, latency_ms=0),
    )


async def test_the_remote_report_and_window_equal_the_local_ones() -> None:
    local = Agent(MemoryStore(), llm=llm(), prices=PRICES)
    app = create_app(Agent(MemoryStore(), llm=llm(), prices=PRICES))
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as remote:
        found = []
        for agent in (local, remote):
            root = await agent.create_session(label="Trip")
            await agent.turn(root.id, "one")
            await agent.turn(root.id, "two")
            report = await agent.usage_report(root.id)
            window = await agent.context_window(root.id, report.calls[0].reply_seq)
            found.append((zero_timings(report), window.parts, window.window, window.reported_input_tokens))
        with pytest.raises(NotFoundError):
            await remote.usage_report("nope")
    await local.close()
    assert found[0] == found[1]
    report = found[0][0]
    assert report.calls[0].cost == pytest.approx(56e-6) and report.calls[1].cost is None


@pytest.fixture
def server_url() -> Iterator[str]:
    app = create_app(Agent(MemoryStore(), llm=llm(), prices=PRICES))
    with running_in_thread(app) as url:
        yield url


def test_the_sync_client_reads_usage_over_real_http(server_url: str) -> None:
    with SyncClient(server_url) as remote:
        root = remote.create_session(label="sync")
        remote.turn(root.id, "one")
        report = remote.usage_report(root.id)
        window = remote.context_window(root.id)
    assert (report.own.calls, report.own.input_tokens, report.own_cost) == (1, 40, pytest.approx(56e-6))
    assert window.reported_input_tokens == 40 and [p.name for p in window.parts] == ["identity", "history"]
