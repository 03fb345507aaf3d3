"""Turns, forks and the log over HTTP (in process, through httpx's ASGI transport)."""

from __future__ import annotations

import asyncio
import json

import httpx
from fastapi import FastAPI

from stellate.errors import ProviderError
from stellate.llm.scripted import Delay, Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import Event, check_log
from stellate.store import BaseStore, SessionId


async def new_session(client: httpx.AsyncClient, label: str = "s") -> str:
    return str((await client.post("/sessions", json={"label": label})).json()["id"])


def sse_events(text: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    for block in text.strip().split("\r\n\r\n" if "\r\n" in text else "\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            out.append((fields.get("event", "message"), json.loads(fields["data"])))
    return out


async def test_turn_returns_its_result_and_lands_in_the_log(client: httpx.AsyncClient) -> None:
    sid = await new_session(client)
    result = (await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})).json()
    assert result["content"] == "echo: hi" and result["reason"] == "completed" and result["turn"] == 1
    events = (await client.get(f"/sessions/{sid}/events")).json()["events"]
    assert [e["type"] for e in events][-3:] == ["step/end", "model/called", "turn/end"]
    transcript = (await client.get(f"/sessions/{sid}/transcript")).json()
    assert transcript[-2:] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "echo: hi", "tool_calls": []},
    ]


async def test_streamed_turn_has_every_round_and_tool_durations(client: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    llm.push(Reply(text="adding", tool_calls=[tool_call("add", {"a": 2, "b": 3})]), "five")
    sid = await new_session(client)
    response = await client.post(
        f"/sessions/{sid}/turns", json={"content": "2+3?"}, headers={"Accept": "text/event-stream"}
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "message_received" and names[-1] == "turn_finished"
    assert names.count("round_start") == 2 and names.count("text") >= 2
    [finished_tool] = [data for name, data in events if name == "tool_result"]
    assert finished_tool["content"] == "5" and isinstance(finished_tool["duration_ms"], float)
    assert events[-1][1]["result"]["rounds"] == 2  # type: ignore[index]


async def test_a_second_turn_on_a_busy_session_is_refused_with_retry_after(
    client: httpx.AsyncClient, llm: ScriptedLLM
) -> None:
    gate = asyncio.Event()

    async def held(request: LLMRequest) -> str:
        await gate.wait()
        return "slow"

    llm.push(held)
    sid = await new_session(client)
    first = asyncio.create_task(client.post(f"/sessions/{sid}/turns", json={"content": "one"}))
    while not (await client.get(f"/sessions/{sid}")).json()["running"]:
        await asyncio.sleep(0.01)
    assert (await client.get("/turns")).json() == {"session_ids": [sid]}
    busy = await client.post(f"/sessions/{sid}/turns", json={"content": "two"})
    assert busy.status_code == 409 and busy.json()["code"] == "session_busy"
    assert busy.headers["retry-after"] == "1"
    waiting = asyncio.create_task(client.post(f"/sessions/{sid}/turns", params={"wait": True}, json={"content": "3"}))
    gate.set()
    assert (await first).json()["content"] == "slow"
    assert (await waiting).json()["turn"] == 2


async def test_cancel_aborts_the_running_turn(client: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    llm.push(Delay(seconds=30, then="never"))
    sid = await new_session(client)
    turn = asyncio.create_task(client.post(f"/sessions/{sid}/turns", json={"content": "long"}))
    while not (await client.get(f"/sessions/{sid}")).json()["open_turn"]:  # the turn is in the log
        await asyncio.sleep(0.01)
    assert (await client.post(f"/sessions/{sid}/turns/current/cancel")).json() == {"cancelled": True}
    response = await turn
    assert response.status_code == 409 and response.json()["code"] == "turn_cancelled"
    events = (await client.get(f"/sessions/{sid}/events")).json()["events"]
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "aborted"
    assert (await client.post(f"/sessions/{sid}/turns/current/cancel")).json() == {"cancelled": False}


async def test_provider_failure_is_a_503_and_a_recorded_error(
    client: httpx.AsyncClient, llm: ScriptedLLM, app: FastAPI
) -> None:
    llm.push(ProviderError("upstream down", provider="scripted"))
    sid = await new_session(client)
    errors: list[object] = []
    app.state.stellate.spaces.agent("default").add_hook(errors.append, types=["error"])
    response = await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})
    assert [(e.source, e.code, e.session_id) for e in errors] == [("turn", "provider_error", sid)]  # type: ignore[attr-defined]
    assert response.status_code == 503 and response.json()["code"] == "provider_error"
    assert "Traceback" not in response.text
    last = (await client.get(f"/sessions/{sid}/events")).json()["events"][-1]
    assert last["type"] == "turn/end" and last["data"]["reason"] == "error"


async def test_empty_message_is_a_validation_problem(client: httpx.AsyncClient) -> None:
    sid = await new_session(client)
    response = await client.post(f"/sessions/{sid}/turns", json={"content": ""})
    assert response.status_code == 422 and response.json()["code"] == "validation_error"


async def test_fork_by_boundary_or_anchor_follows_the_rules(client: httpx.AsyncClient) -> None:
    sid = await new_session(client, "src")
    await client.post(f"/sessions/{sid}/turns", json={"content": "one"})
    await client.post(f"/sessions/{sid}/turns", json={"content": "two"})
    fork = f"/sessions/{sid}/forks"
    anchored = await client.post(fork, json={"label": "a", "at_seq": 2})
    assert anchored.status_code == 201
    child = anchored.json()["id"]
    inherited = (await client.get(f"/sessions/{child}/events")).json()
    assert inherited["inherited"] == 8 and all(e["inherited"] for e in inherited["events"][:8])
    assert (await client.get(f"/sessions/{child}/transcript")).json()[-1]["content"] == "echo: one"
    for boundary, status, code in [(2, 409, "open_turn"), (99, 422, "invalid_boundary")]:
        response = await client.post(fork, json={"label": "x", "boundary": boundary})
        assert (response.status_code, response.json()["code"]) == (status, code), boundary
    past_the_end = await client.post(fork, json={"label": "x", "at_seq": 99})  # the last completed turn
    assert (await client.get(f"/sessions/{past_the_end.json()['id']}")).json()["fork_seq"] == 14
    both = await client.post(fork, json={"label": "x", "boundary": 6, "at_seq": 6})
    assert both.status_code == 422 and both.json()["code"] == "validation_error"
    profile = await client.post(fork, json={"label": "x", "profile": "nope"})
    assert profile.status_code == 422 and profile.json()["code"] == "profile_not_found"
    exact = await client.post(fork, json={"label": "b", "boundary": 7})
    assert (await client.get(f"/sessions/{exact.json()['id']}")).json()["fork_seq"] == 7


async def test_context_of_a_past_call_is_what_the_model_received(client: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    sid = await new_session(client, "ctx")
    await client.put(f"/sessions/{sid}/insight", json={"content": "a hint"})
    await client.post(f"/sessions/{sid}/turns", json={"content": "first"})
    await client.post(f"/sessions/{sid}/turns", json={"content": "second"})
    events = (await client.get(f"/sessions/{sid}/events")).json()["events"]
    first_reply = next(e["seq"] for e in events if e["type"] == "assistant/message")
    context = (await client.get(f"/sessions/{sid}/context", params={"step": first_reply})).json()
    sent = [m.content for m in llm.requests[0].messages]
    assert [m["content"] for m in context["messages"]] == sent
    assert context["insight"] == "a hint" and context["tools"][0]["name"] == "add"
    latest = (await client.get(f"/sessions/{sid}/context")).json()
    assert [m["content"] for m in latest["messages"]] == [m.content for m in llm.requests[1].messages]
    wrong = await client.get(f"/sessions/{sid}/context", params={"step": 0})
    assert wrong.status_code == 422 and wrong.json()["code"] == "usage_error"


async def test_events_page_with_after_and_limit(client: httpx.AsyncClient) -> None:
    sid = await new_session(client)
    await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})
    page = (await client.get(f"/sessions/{sid}/events", params={"after": 2, "limit": 2})).json()
    assert [e["seq"] for e in page["events"]] == [3, 4] and page["next_seq"] == 8
    typed = (await client.get(f"/sessions/{sid}/events", params={"types": "turn/start,turn/end"})).json()
    assert [e["type"] for e in typed["events"]] == ["turn/start", "turn/end"]
    bad = await client.get(f"/sessions/{sid}/events", params={"after": "x"})
    assert bad.status_code == 422


async def test_capabilities_and_info(client: httpx.AsyncClient, app: FastAPI) -> None:
    caps = (await client.get("/capabilities")).json()
    assert [t["name"] for t in caps["tools"]] == ["add"] and caps["default_model"]["provider"] == "scripted"
    info = (await client.get("/info")).json()
    assert info["space"] == "default" and info["auth"] == "none"
    assert (await client.get("/health")).json() == {"status": "ok"}


async def test_a_session_held_by_another_writer_is_busy_at_once(client: httpx.AsyncClient, store: BaseStore) -> None:
    sid = await new_session(client)
    lease, _ = await store.acquire_lease(SessionId(sid), owner="another-process", ttl=30)
    try:
        busy = await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})
        assert busy.status_code == 409 and busy.json()["code"] == "session_busy"
        assert busy.headers["retry-after"] == "1" and busy.json()["details"]["holder"] == "another-process"
    finally:
        await store.release_lease(SessionId(sid), lease)
    assert (await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})).json()["turn"] == 1


async def test_a_running_session_forks_at_its_completed_turns(client: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    """While a turn runs: an anchor on an earlier turn, or none, forks at once; an anchor inside it is unavailable."""
    gate = asyncio.Event()

    async def held(request: LLMRequest) -> str:
        await gate.wait()
        return "late"

    sid = await new_session(client)
    await client.post(f"/sessions/{sid}/turns", json={"content": "one"})
    llm.push(held)
    turn = asyncio.create_task(client.post(f"/sessions/{sid}/turns", json={"content": "two"}))
    while not (await client.get(f"/sessions/{sid}")).json()["open_turn"]:
        await asyncio.sleep(0.01)
    inside = await client.post(f"/sessions/{sid}/forks", json={"label": "x", "at_seq": 8})
    assert inside.status_code == 409 and inside.json()["code"] == "fork_unavailable"
    anchored = await client.post(f"/sessions/{sid}/forks", json={"label": "y", "at_seq": 3})
    plain = await client.post(f"/sessions/{sid}/forks", json={"label": "z", "context": "inherit"})
    assert anchored.status_code == plain.status_code == 201
    for child in (anchored.json(), plain.json()):
        assert (await client.get(f"/sessions/{child['id']}")).json()["fork_seq"] == 7
    assert not turn.done()
    waiting = asyncio.create_task(
        client.post(f"/sessions/{sid}/forks?wait=true", json={"label": "w", "context": "inherit"})
    )
    gate.set()
    assert (await turn).json()["content"] == "late"
    newest = (await client.get(f"/sessions/{(await waiting).json()['id']}")).json()
    assert newest["fork_seq"] >= 12 and newest["source_id"] == sid
    events = (await client.get(f"/sessions/{sid}/events")).json()["events"]
    check_log([Event(seq=e["seq"], type=e["type"], time=e["time"], data=e["data"]) for e in events])
    reasons = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert reasons == ["completed", "completed"]
