"""The usage routes on both SQL backends: per-call rows, totals, unknowns as null, and the context window."""

from __future__ import annotations

import httpx
import pytest
from server_support import make_agent

from stellate.agent import Price
from stellate.llm.scripted import Reply, ScriptedLLM
from stellate.llm.types import Usage
from stellate.server import create_app
from stellate.store import BaseStore


def priced_app(store: BaseStore, llm: ScriptedLLM, **prices: Price) -> httpx.AsyncClient:
    app = create_app(make_agent(store, llm, prices=prices))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1")


async def test_usage_lists_each_call_with_turn_and_session_totals(store: BaseStore) -> None:
    llm = ScriptedLLM([Reply(text="a", usage=Usage(input_tokens=1000, output_tokens=100)), "b"], estimate_usage=False)
    async with priced_app(store, llm, **{"scripted-model": Price(input=3.0, output=6.0)}) as http:
        sid = (await http.post("/sessions", json={"label": "s"})).json()["id"]
        for text in ("one", "two"):
            assert (await http.post(f"/sessions/{sid}/turns", json={"content": text})).status_code == 200
        body = (await http.get(f"/sessions/{sid}/usage")).json()
    first, second = body["calls"]
    assert (first["input_tokens"], first["output_tokens"], first["stop_reason"]) == (1000, 100, "stop")
    assert first["cost"] == pytest.approx(0.0036) and first["model"] == "scripted-model"
    assert (second["input_tokens"], second["output_tokens"], second["cost"]) == (None, None, None)
    assert [(t["turn"], t["calls"], t["cost"] is None) for t in body["turns"]] == [(1, 1, False), (2, 1, True)]
    assert body["own"]["calls"] == 2 and body["own"]["input_tokens"] is None and body["own"]["cost"] is None
    assert body["inherited"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0, "latency_ms": 0, "cost": None}
    assert body["priced"] is True


async def test_a_fork_reports_its_inherited_calls_apart(store: BaseStore) -> None:
    llm = ScriptedLLM(default=Reply(text="ok", usage=Usage(input_tokens=10, output_tokens=2)))
    async with priced_app(store, llm) as http:
        sid = (await http.post("/sessions", json={"label": "s"})).json()["id"]
        await http.post(f"/sessions/{sid}/turns", json={"content": "one"})
        child = (await http.post(f"/sessions/{sid}/forks", json={"label": "c", "context": "inherit"})).json()["id"]
        await http.post(f"/sessions/{child}/turns", json={"content": "two"})
        body = (await http.get(f"/sessions/{child}/usage")).json()
    assert [c["inherited"] for c in body["calls"]] == [True, False]
    assert (body["own"]["calls"], body["inherited"]["calls"], body["own"]["input_tokens"]) == (1, 1, 10)
    assert body["priced"] is False and body["own"]["cost"] is None


async def test_context_window_of_a_call_and_its_errors(store: BaseStore) -> None:
    llm = ScriptedLLM(default=Reply(text="ok", usage=Usage(input_tokens=50, output_tokens=2)))
    async with priced_app(store, llm) as http:
        sid = (await http.post("/sessions", json={"label": "Trip", "system_prompt": "Be brief."})).json()["id"]
        assert (await http.get(f"/sessions/{sid}/context-window")).json()["code"] == "usage_error"
        await http.post(f"/sessions/{sid}/turns", json={"content": "hello"})
        reply_seq = (await http.get(f"/sessions/{sid}/usage")).json()["calls"][0]["reply_seq"]
        found = await http.get(f"/sessions/{sid}/context-window", params={"reply_seq": reply_seq})
        wrong = await http.get(f"/sessions/{sid}/context-window", params={"reply_seq": 0})
        missing = await http.get("/sessions/nope/usage")
    body = found.json()
    assert [p["name"] for p in body["parts"]] == ["system_prompt", "identity", "history", "tools"]
    assert body["reply_seq"] == reply_seq and body["reported_input_tokens"] == 50
    assert body["window"] == llm.max_context_tokens and body["threshold"] == int(0.8 * llm.max_context_tokens)
    assert wrong.status_code == 422 and wrong.json()["code"] == "usage_error"
    assert missing.status_code == 404
