"""Bad input gets a typed problem response, never a 500 with a traceback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from server_support import make_agent

from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.store.memory import MemoryStore


def is_problem(response: httpx.Response, status: int, code: str) -> bool:
    body = response.json()
    return (
        response.status_code == status
        and response.headers["content-type"] == "application/problem+json"
        and body["code"] == code
        and body["status"] == status
        and body["type"] == f"urn:stellate:problem:{code}"
    )


async def test_malformed_json_and_unknown_fields_are_422(client: httpx.AsyncClient) -> None:
    bad_json = await client.post("/sessions", content=b'{"label": ', headers={"content-type": "application/json"})
    assert is_problem(bad_json, 422, "validation_error")
    unknown = await client.post("/sessions", json={"label": "x", "colour": "red"})
    assert is_problem(unknown, 422, "validation_error") and "colour" in unknown.json()["detail"]


async def test_oversized_bodies_are_413_declared_or_streamed(store: object, llm: ScriptedLLM) -> None:
    app = create_app(make_agent(MemoryStore(), llm), max_body=1000)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as http:
        declared = await http.post("/sessions", json={"label": "x" * 2000})
        assert is_problem(declared, 413, "request_too_large")

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"label": "'
            for _ in range(10):
                yield b"y" * 200
            yield b'"}'

        streamed = await http.post("/sessions", content=chunks(), headers={"content-type": "application/json"})
        assert is_problem(streamed, 413, "request_too_large")
        assert (await http.get("/sessions")).json()["items"] == []


async def test_unknown_routes_and_methods_are_problems(client: httpx.AsyncClient) -> None:
    assert is_problem(await client.get("/nowhere"), 404, "not_found")
    assert is_problem(await client.delete("/forest"), 405, "method_not_allowed")


async def test_an_unexpected_exception_is_a_500_without_traceback(app: FastAPI) -> None:
    agent = app.state.stellate.spaces.agent("default")

    async def broken() -> None:
        raise RuntimeError("secret internals")

    agent.get_topology = broken
    # As a real server does: answer, then hand the exception to the server's log (not to the client).
    transport = httpx.ASGITransport(app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1/v1") as http:
        response = await http.get("/forest")
    assert is_problem(response, 500, "internal_error")
    assert "secret internals" not in response.text and "Traceback" not in response.text


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/sessions", {"limit": 0}),
        ("/sessions", {"limit": "many"}),
        ("/sessions", {"status": "gone"}),
        # Past any 64-bit column: SQLite raised OverflowError (a 500) where PostgreSQL answered 422.
        ("/sessions/s-none/context", {"step": 2**70}),
        ("/sessions/s-none/events", {"after": 2**70}),
    ],
)
async def test_bad_query_values_are_422(client: httpx.AsyncClient, path: str, params: dict[str, object]) -> None:
    assert is_problem(await client.get(path, params=params), 422, "validation_error")


async def test_the_api_docs_page_needs_no_internet(client: httpx.AsyncClient) -> None:
    page = await client.get("http://127.0.0.1/docs")
    assert page.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in page.text
    assert "cdn" not in page.text.lower() and "https://" not in page.text
    script = await client.get("http://127.0.0.1/docs-assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    assert (await client.get("http://127.0.0.1/openapi.json")).json()["info"]["title"] == "stellate"


async def test_a_fork_point_past_any_seq_is_422(client: httpx.AsyncClient) -> None:
    sid = (await client.post("/sessions", json={"label": "x"})).json()["id"]
    for point in ("boundary", "at_seq"):
        response = await client.post(f"/sessions/{sid}/forks", json={"label": "y", point: 2**70})
        assert is_problem(response, 422, "validation_error")


async def test_the_context_of_a_call_always_names_its_prompt_and_insight(client: httpx.AsyncClient) -> None:
    """The schema marks both required: null when the call had none, never left out."""
    sid = (await client.post("/sessions", json={"label": "plain"})).json()["id"]
    await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})
    context = (await client.get(f"/sessions/{sid}/context")).json()
    assert context["system_prompt"] is None and context["insight"] is None
    assert all(None not in message.values() for message in context["messages"])
