"""The loopback mock provider itself: routing, script and handler, recording."""

from __future__ import annotations

import httpx
import pytest

from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply, MockRequest


async def test_server_listens_on_loopback_with_an_os_assigned_port(server: MockLLMServer) -> None:
    url = httpx.URL(server.url)
    assert url.host == "127.0.0.1" and url.port not in (None, 0)


def test_url_before_start_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = MockLLMServer().url


async def test_request_bodies_and_headers_are_recorded(server: MockLLMServer) -> None:
    server.push(MockReply(text="hi"))
    async with httpx.AsyncClient() as client:
        await client.post(f"{server.url}/v1/messages", json={"model": "m", "messages": []}, headers={"X-Key": "k"})
    (request,) = server.requests
    assert (request.api, request.path, request.body, request.stream) == (
        "anthropic",
        "/v1/messages",
        {"model": "m", "messages": []},
        False,
    )
    assert request.headers["x-key"] == "k"


async def test_handler_answers_once_the_script_is_empty() -> None:
    async def handler(request: MockRequest) -> MockReply:
        return MockReply(text=f"echo {request.body['messages'][-1]['content']}")

    async with MockLLMServer([MockReply(text="scripted")], handler=handler) as server, httpx.AsyncClient() as client:
        url = f"{server.openai_base_url}/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "tulips"}]}
        first = (await client.post(url, json=body)).json()
        second = (await client.post(url, json=body)).json()
    assert first["choices"][0]["message"]["content"] == "scripted"
    assert second["choices"][0]["message"]["content"] == "echo tulips"


async def test_empty_script_without_handler_answers_400_with_a_reason(server: MockLLMServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.openai_base_url}/chat/completions", json={"model": "m"})
    assert response.status_code == 400 and "script is empty" in response.json()["error"]["message"]


async def test_unknown_path_answers_404(server: MockLLMServer) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/v1/embeddings", json={})
    assert response.status_code == 404 and server.requests == []


async def test_failure_sends_its_status_error_body_and_retry_after(server: MockLLMServer) -> None:
    server.push(MockFailure(status=429, message="slow down", retry_after=2))
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.url}/v1/messages", json={"model": "m"})
    assert response.status_code == 429 and response.headers["retry-after"] == "2"
    assert response.json()["error"] == {"type": "rate_limit_error", "message": "slow down"}


async def test_openai_stream_ends_with_usage_chunk_and_done(server: MockLLMServer) -> None:
    server.push(MockReply(text="a b"))
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.openai_base_url}/chat/completions", json=body)
    data = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert '"choices": []' in data[-2] and '"usage"' in data[-2]
    assert response.headers["content-type"] == "text/event-stream"


async def test_connections_are_kept_alive_unless_the_client_asks_to_close(server: MockLLMServer) -> None:
    server.push(MockReply(text="a"), MockReply(text="b"), MockReply(text="c"))
    body = {"model": "m", "messages": []}
    async with httpx.AsyncClient() as client:
        await client.post(f"{server.url}/v1/messages", json=body)
        await client.post(f"{server.url}/v1/messages", json=body)
        await client.post(f"{server.url}/v1/messages", json=body, headers={"Connection": "close"})
    assert server.connections == 1 and len(server.requests) == 3


async def test_a_context_overflow_streams_empty_and_answers_400_unstreamed(server: MockLLMServer) -> None:
    """The llama.cpp server's behaviour: 200 with an empty stream, 400 context_length_exceeded without."""
    server.push(MockFailure.context_overflow(), MockFailure.context_overflow())
    url = f"{server.openai_base_url}/chat/completions"
    async with httpx.AsyncClient() as client:
        streamed = await client.post(url, json={"model": "m", "messages": [], "stream": True})
        whole = await client.post(url, json={"model": "m", "messages": []})
    assert (streamed.status_code, streamed.text) == (200, "")
    assert streamed.headers["content-type"] == "text/event-stream"
    assert whole.status_code == 400
    assert whole.json()["error"]["code"] == "context_length_exceeded"
