"""Edit, regenerate, replay and compare over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from server_support import echo, make_agent
from test_turns_api import new_session, sse_events

from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.server import create_app
from stellate.store import BaseStore, SessionId

STREAM = {"Accept": "text/event-stream"}


async def with_turns(client: httpx.AsyncClient, *texts: str) -> str:
    sid = await new_session(client, "Trip")
    for text in texts:
        assert (await client.post(f"/sessions/{sid}/turns", json={"content": text})).status_code == 200
    return sid


async def test_edit_answers_the_branch_and_its_turn_and_keeps_the_source(
    client: httpx.AsyncClient, store: BaseStore
) -> None:
    """The branch inherits turn 1 by reference and holds the edited turn 2; the source keeps its turns."""
    sid = await with_turns(client, "one", "two")
    before = (await client.get(f"/sessions/{sid}/transcript")).json()
    found = (await client.post(f"/sessions/{sid}/edit", json={"turn": 2, "content": "deux"})).json()
    branch = found["session"]
    assert found["result"]["content"] == "echo: deux" and found["result"]["turn"] == 2
    assert branch["label"] == "Trip · edit 2" and branch["parent_id"] == sid
    transcript = (await client.get(f"/sessions/{branch['id']}/transcript")).json()
    assert [m["content"] for m in transcript] == ["one", "echo: one", "deux", "echo: deux"]
    assert (await client.get(f"/sessions/{sid}/transcript")).json() == before
    record = await store.get_session(SessionId(branch["id"]))
    inherited = await store.read_events(record.id, stop=record.inherited)
    assert inherited == (await store.read_events(SessionId(sid)))[: record.inherited]


async def test_a_streamed_regeneration_names_its_branch_first(client: httpx.AsyncClient) -> None:
    """SSE: a ``branch`` event, then the turn's events for that branch, ending with ``turn_finished``."""
    sid = await with_turns(client, "one", "two")
    response = await client.post(f"/sessions/{sid}/regenerate", json={}, headers=STREAM)
    events = sse_events(response.text)
    name, data = events[0]
    branch: dict[str, Any] = data["session"]  # type: ignore[assignment]
    assert name == "branch" and branch["label"] == "Trip · regenerate 2"
    assert [n for n, _ in events][1] == "message_received" and events[-1][0] == "turn_finished"
    assert {d["session_id"] for _, d in events[1:]} == {branch["id"]}
    assert events[-1][1]["result"]["content"] == "echo: two"  # type: ignore[index]


async def test_bad_turns_are_refused_with_a_problem(client: httpx.AsyncClient) -> None:
    """A turn the session does not have is 422 usage_error; an unknown session is 404; turn 0 fails validation."""
    sid = await with_turns(client, "one")
    missing = await client.post(f"/sessions/{sid}/edit", json={"turn": 5, "content": "x"})
    assert missing.status_code == 422 and missing.json()["code"] == "usage_error"
    unknown = await client.post("/sessions/nope/regenerate", json={"turn": 1})
    assert unknown.status_code == 404 and unknown.json()["code"] == "session_not_found"
    zero = await client.post(f"/sessions/{sid}/edit", json={"turn": 0, "content": "x"})
    assert zero.status_code == 422


@pytest.fixture
async def two_models(store: BaseStore) -> AsyncIterator[httpx.AsyncClient]:
    other = ScriptedLLM(default=lambda request: f"other: {request.messages[-1].content}", model="other-model")
    agent = make_agent(store, ScriptedLLM(default=echo), adapters={"other": other})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(create_app(agent)), base_url="http://127.0.0.1/v1"
    ) as http:
        yield http


async def test_replay_streams_progress_per_turn_into_a_sibling(two_models: httpx.AsyncClient) -> None:
    """Each replayed turn is announced (index of total), streamed, and the branch ends with the new model's answers."""
    sid = await with_turns(two_models, "one", "two", "three")
    response = await two_models.post(f"/sessions/{sid}/replay", json={"from_turn": 2, "llm": "other"}, headers=STREAM)
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[0] == "branch" and names[-1] == "replay_finished"
    progress = [data for name, data in events if name == "replay_turn"]
    assert [(p["index"], p["total"], p["source_turn"]) for p in progress] == [(1, 2, 2), (2, 2, 3)]
    assert names.count("turn_finished") == 2
    finished = events[-1][1]
    branch_id = finished["session"]["id"]  # type: ignore[index]
    transcript = (await two_models.get(f"/sessions/{branch_id}/transcript")).json()
    assert [m["content"] for m in transcript][2:] == ["two", "other: two", "three", "other: three"]
    assert [r["turn"] for r in finished["results"]] == [2, 3]  # type: ignore[index]


async def test_replay_as_json_and_its_errors(two_models: httpx.AsyncClient) -> None:
    """Without SSE the replay answers once done; an unknown model or profile is refused before any branch."""
    sid = await with_turns(two_models, "one", "two")
    done = (await two_models.post(f"/sessions/{sid}/replay", json={"from_turn": 1, "system_prompt": "Brief"})).json()
    assert [r["content"] for r in done["results"]] == ["echo: one", "echo: two"] and done["from_turn"] == 1
    count = len((await two_models.get("/sessions")).json()["items"])
    bad_model = await two_models.post(f"/sessions/{sid}/replay", json={"from_turn": 1, "llm": "nope"})
    assert bad_model.status_code == 422 and bad_model.json()["code"] == "adapter_not_found"
    bad_profile = await two_models.post(f"/sessions/{sid}/replay", json={"from_turn": 1, "profile": "nope"})
    assert bad_profile.json()["code"] == "profile_not_found"
    assert len((await two_models.get("/sessions")).json()["items"]) == count


async def test_compare_aligns_two_edits_and_marks_tool_calls(client: httpx.AsyncClient, llm: ScriptedLLM) -> None:
    """Two edits of turn 2 share turn 1; the side that called a tool differs from the one that did not."""
    sid = await with_turns(client, "one", "two")
    llm.push(Reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]), "three")
    left = (await client.post(f"/sessions/{sid}/edit", json={"turn": 2, "content": "add 1 2"})).json()
    right = (await client.post(f"/sessions/{sid}/edit", json={"turn": 2, "content": "just talk"})).json()
    found = (await client.get("/compare", params={"a": left["session"]["id"], "b": right["session"]["id"]})).json()
    assert found["ancestor_id"] == sid and [t["turn"] for t in found["shared_turns"]] == [1]
    [row] = found["rows"]
    assert row["tools_differ"] and row["a"]["tool_calls"][0]["name"] == "add" and row["b"]["tool_calls"] == []
    assert set(found["a"]["totals"]) == {"calls", "input_tokens", "output_tokens", "latency_ms"}
    missing = await client.get("/compare", params={"a": sid, "b": "nope"})
    assert missing.status_code == 404
