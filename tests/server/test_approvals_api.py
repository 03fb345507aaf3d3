"""Approvals over REST and `stellate.client`: list the waiting calls, decide one, stream the resumed turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from server_support import make_agent, running, sse

from stellate import Approval
from stellate.client import Client, SyncClient
from stellate.errors import ConflictError, NotFoundError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.server import create_app
from stellate.store import BaseStore, SessionId


def paused_script() -> ScriptedLLM:
    return ScriptedLLM([Reply(tool_calls=[tool_call("add", {"a": 2, "b": 3}, id="c1")])], default="the sum is in")


@pytest.fixture
async def http(store: BaseStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_agent(store, paused_script(), approvals={"add": True}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as client:
        yield client


async def paused_session(http: httpx.AsyncClient) -> str:
    sid = str((await http.post("/sessions", json={"label": "p"})).json()["id"])
    turn = await http.post(f"/sessions/{sid}/turns", json={"content": "add 2 and 3"})
    assert turn.status_code == 200 and turn.json()["reason"] == "awaiting_approval"
    return sid


async def test_the_paused_session_lists_its_waiting_call_everywhere(http: httpx.AsyncClient) -> None:
    sid = await paused_session(http)
    [item] = (await http.get(f"/sessions/{sid}/approvals")).json()["items"]
    assert (item["call_id"], item["name"], json.loads(item["arguments"])) == ("c1", "add", {"a": 2, "b": 3})
    assert (await http.get("/approvals")).json()["items"] == [item]
    detail = (await http.get(f"/sessions/{sid}")).json()
    assert (detail["awaiting_approval"], detail["open_turn"], detail["running"]) == (1, True, False)
    [listed] = (await http.get("/sessions")).json()["items"]
    assert listed["awaiting_approval"] == 1
    [node] = (await http.get("/forest")).json()
    assert node["awaiting_approval"] == 1
    refused = await http.post(f"/sessions/{sid}/turns", json={"content": "again"})
    assert (refused.status_code, refused.json()["code"]) == (409, "approval_pending")


async def test_an_edited_approval_resumes_the_turn_and_answers_its_result(http: httpx.AsyncClient) -> None:
    sid = await paused_session(http)
    body = {"decision": "approve", "arguments": json.dumps({"a": 40, "b": 2}), "by": "ann"}
    decided = await http.post(f"/sessions/{sid}/approvals/c1", json=body)
    assert decided.status_code == 200
    out = decided.json()
    assert (out["decision"], out["result"]["reason"], out["result"]["content"]) == (
        "approve",
        "completed",
        "the sum is in",
    )
    events = (await http.get(f"/sessions/{sid}/events")).json()["events"]
    [result] = [e["data"] for e in events if e["type"] == "tool/result"]
    assert result["content"] == "42"
    again = await http.post(f"/sessions/{sid}/approvals/c1", json={"decision": "deny"})
    assert (again.status_code, again.json()["code"]) == (409, "approval_decided")
    missing = await http.post(f"/sessions/{sid}/approvals/zz", json={"decision": "deny"})
    assert (missing.status_code, missing.json()["code"]) == (404, "approval_not_found")


async def test_a_denial_streams_the_decision_and_the_resumed_turn(http: httpx.AsyncClient) -> None:
    sid = await paused_session(http)
    headers = {"Accept": "text/event-stream"}
    body = {"decision": "deny", "reason": "no maths today"}
    async with http.stream("POST", f"/sessions/{sid}/approvals/c1", json=body, headers=headers) as response:
        names = [(name, data) async for name, _, data in sse(response)]
    kinds = [name for name, _ in names]
    assert kinds[0] == "approval_decided" and kinds[-1] == "turn_finished"
    [finished] = [data for name, data in names if name == "tool_result"]
    assert finished["content"].endswith("Their reason: no maths today") and finished["is_error"] is True


async def test_the_client_decides_like_the_agent_and_keeps_the_codes(store: BaseStore) -> None:
    app = create_app(make_agent(store, paused_script(), approvals={"add": True}))
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as client:
        sid = (await client.create_session(label="c")).id
        assert (await client.turn(sid, "add")).reason == "awaiting_approval"
        [pending] = await client.pending_approvals(sid)
        assert (await client.get_session_digest(sid)).awaiting_approval == 1
        result = await client.approve(sid, pending.call_id)
        assert result is not None and result.content == "the sum is in"
        with pytest.raises(ConflictError) as decided:
            await client.deny(sid, pending.call_id)
        assert decided.value.code == "approval_decided"
        with pytest.raises(NotFoundError):
            await client.approve(sid, "nope")


async def test_the_blocking_client_over_real_http(store: BaseStore) -> None:
    app = create_app(make_agent(store, paused_script(), approvals={"add": True}))
    async with running(app) as (url, _):

        def scenario() -> tuple[str, str | None]:
            with SyncClient(url.removesuffix("/v1")) as client:
                sid = client.create_session(label="b").id
                client.turn(sid, "add")
                [pending] = client.pending_approvals()
                result = client.deny(sid, pending.call_id, reason="later")
                return pending.name, result.content if result else None

        assert await asyncio.to_thread(scenario) == ("add", "the sum is in")


async def test_the_space_event_stream_tells_of_the_request_and_the_decision(store: BaseStore) -> None:
    app = create_app(make_agent(store, paused_script(), approvals={"add": True}))
    async with running(app) as (url, _), httpx.AsyncClient(base_url=url, timeout=20) as http:
        types = "approval_requested,approval_decided,turn_finished"
        async with http.stream("GET", "/events", params={"types": types}) as response:

            async def act() -> None:
                await asyncio.sleep(0.2)  # the subscription is registered when the stream starts
                sid = await paused_session(http)
                await http.post(f"/sessions/{sid}/approvals/c1", json={"decision": "approve", "by": "ann"})

            acting = asyncio.create_task(act())
            seen: list[tuple[str, Any]] = []
            async for name, _, data in sse(response):
                seen.append((name, data.get("result", {}).get("reason") if name == "turn_finished" else data))
                if len(seen) == 4:
                    break
            await acting
    assert [name for name, _ in seen] == ["approval_requested", "turn_finished", "approval_decided", "turn_finished"]
    assert seen[0][1]["call"]["id"] == "c1" and seen[2][1]["by"] == "ann"
    assert (seen[1][1], seen[3][1]) == ("awaiting_approval", "completed")


async def test_the_server_decides_a_passed_deadline_nobody_visits(store: BaseStore) -> None:
    agent = make_agent(store, paused_script(), approvals={"add": Approval(timeout=0, on_timeout="approve")})
    app = create_app(agent, approval_sweep=0.05)
    async with running(app) as (url, _), httpx.AsyncClient(base_url=url, timeout=20) as http:
        sid = str((await http.post("/sessions", json={"label": "p"})).json()["id"])
        await http.post(f"/sessions/{sid}/turns", json={"content": "add"})
        for _ in range(200):  # only the sweep looks at the session: nothing here reads its approvals
            detail = (await http.get(f"/sessions/{sid}")).json()
            if not detail["open_turn"]:
                break
            await asyncio.sleep(0.05)
    events = await store.read_events(SessionId(sid))
    [decided] = [e.data for e in events if e.type == "tool/approval_decided"]
    assert (decided["decision"], decided["by"]) == ("approved", "deadline")
    assert events[-1].type == "turn/end" and events[-1].data["reason"] == "completed"
