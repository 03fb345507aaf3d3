"""A paused turn across real `stellate serve` processes: it outlives its worker, and any worker resumes it.

Real processes on one PostgreSQL schema, a loopback OpenAI-compatible model that asks for the built-in
``create_session`` tool (which ``$STELLATE_APPROVE_TOOLS`` marks as needing approval), and real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_support import Worker, schema_url
from serve_support import start_worker as launch_worker

from stellate.log.messages import ToolCall
from stellate.testing.mock_llm import MockLLMServer, MockReply, MockRequest

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


def branching_model(request: MockRequest) -> MockReply:
    """Asks for a child session on a user message; after a tool result, says what it got."""
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return MockReply(text=f"tool said: {last['content']}")
    call = ToolCall(id=f"call_{len(request.body['messages'])}", name="create_session", arguments='{"label": "Budget"}')
    return MockReply(tool_calls=[call])


@pytest.fixture
async def model() -> AsyncIterator[MockLLMServer]:
    async with MockLLMServer(handler=branching_model) as server:
        yield server


@pytest.fixture
def db_url(pg_url: str, pg_schema: str) -> str:
    return schema_url(pg_url, pg_schema)


@pytest.fixture
def start_worker(db_url: str, model: MockLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("STELLATE_APPROVE_TOOLS", "create_session")
    started: list[Worker] = []

    async def start() -> Worker:
        worker = await launch_worker(db_url, model.openai_base_url, tmp_path)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


async def paused_on(http: httpx.AsyncClient, worker: Worker) -> str:
    sid = str((await http.post(f"{worker.url}/v1/sessions", json={"label": "Trip"})).json()["id"])
    turn = await http.post(f"{worker.url}/v1/sessions/{sid}/turns", json={"content": "plan the budget apart"})
    assert turn.status_code == 200 and turn.json()["reason"] == "awaiting_approval", turn.text
    return sid


async def test_a_pause_outlives_its_worker_and_another_worker_resumes_it(
    start_worker: Any, model: MockLLMServer
) -> None:
    first = await start_worker()
    async with httpx.AsyncClient(timeout=60) as http:
        sid = await paused_on(http, first)
        first.kill()  # the paused turn lives in the log only
        second = await start_worker()
        [pending] = (await http.get(f"{second.url}/v1/approvals")).json()["items"]
        assert (pending["session_id"], pending["name"]) == (sid, "create_session")
        assert (await http.get(f"{second.url}/v1/sessions/{sid}")).json()["awaiting_approval"] == 1
        edited = json.dumps({"label": "Money"})
        body = {"decision": "approve", "arguments": edited, "by": "ann"}
        decided = await http.post(f"{second.url}/v1/sessions/{sid}/approvals/{pending['call_id']}", json=body)
        assert decided.status_code == 200, decided.text
        result = decided.json()["result"]
        assert (result["reason"], result["turn"]) == ("completed", 1)
        labels = {d["label"] for d in (await http.get(f"{second.url}/v1/sessions")).json()["items"]}
        assert labels == {"Trip", "Money"}
        detail = (await http.get(f"{second.url}/v1/sessions/{sid}")).json()
        assert (detail["open_turn"], detail["awaiting_approval"], detail["turn_count"]) == (False, 0, 1)
    [tool_message] = [m for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
    assert tool_message["content"].startswith("Created session ") and tool_message["content"].endswith(
        'labelled "Money".'
    )


async def test_two_approvers_on_two_workers_one_wins_the_other_is_told(start_worker: Any) -> None:
    workers = [await start_worker(), await start_worker()]
    async with httpx.AsyncClient(timeout=60) as http:
        sid = await paused_on(http, workers[0])
        [pending] = (await http.get(f"{workers[1].url}/v1/sessions/{sid}/approvals")).json()["items"]
        path = f"/v1/sessions/{sid}/approvals/{pending['call_id']}"
        answers = await asyncio.gather(
            http.post(workers[0].url + path, json={"decision": "approve", "by": "ann"}),
            http.post(workers[1].url + path, json={"decision": "deny", "by": "bob", "reason": "no"}),
        )
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [200, 409], [a.text for a in answers]
        [loser] = [a for a in answers if a.status_code == 409]
        assert loser.json()["code"] == "approval_decided"
        events = (await http.get(f"{workers[1].url}/v1/sessions/{sid}/events")).json()["events"]
        assert [e["type"] for e in events].count("tool/approval_decided") == 1
        assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "completed"
