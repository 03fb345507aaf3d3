"""The aiohttp path of the HTTP channel: same lines, same answers, same failures as httpx; httpx when told."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import httpx
import pytest

pytest.importorskip("aiohttp")

from stellate.errors import ProviderError
from stellate.llm._http_aiohttp import split_lines
from stellate.llm._retry import RetryPolicy
from stellate.llm.openai import OpenAIAdapter
from stellate.llm.types import LLMRequest, ResponseDone, StreamEvent
from stellate.log.messages import UserMessage
from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply

REQUEST = LLMRequest(messages=[UserMessage(content="hi")])


async def chunks(*items: bytes) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def test_lines_split_on_every_line_end_across_chunks_as_httpx_does() -> None:
    source = chunks(b"data: a\r", b"\ndata: b\n\n", b"\xc3", b"\xa9\rx\r\ny", b"\r")
    assert [line async for line in split_lines(source)] == ["data: a", "data: b", "", "é", "x", "y"]


async def test_lines_keep_the_unicode_separators_json_strings_may_hold() -> None:
    assert [line async for line in split_lines(chunks('data: "a\u2028b\x0c"\n'.encode()))] == ['data: "a\u2028b\x0c"']


def _final_text(events: list[StreamEvent]) -> str:
    """The text of the answer a stream ended with (it ends with its `ResponseDone`)."""
    done = events[-1]
    assert isinstance(done, ResponseDone), done
    return done.response.message.content


def _adapter(server: MockLLMServer) -> OpenAIAdapter:
    retry = RetryPolicy(max_attempts=2, base_delay=0.01)
    return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="test", retry=retry)


async def test_a_streamed_and_a_plain_call_go_over_aiohttp() -> None:
    async with MockLLMServer([MockReply(text="Hello there"), MockReply(text="Plain")]) as server:
        llm = _adapter(server)
        assert llm._channel._aio is not None
        events = [event async for event in llm.stream(REQUEST)]
        assert _final_text(events) == "Hello there"
        assert (await llm.complete(REQUEST)).message.content == "Plain"
        await llm.aclose()
    assert server.connections == 1  # the stream was read to its end: its connection served the next call


async def test_error_statuses_are_retried_or_refused_as_over_httpx() -> None:
    script = [MockFailure(status=429, retry_after=0.01), MockReply(text="after"), MockFailure(status=400)]
    async with MockLLMServer(script) as server:
        llm = _adapter(server)
        assert (await llm.complete(REQUEST)).message.content == "after"
        with pytest.raises(ProviderError, match="HTTP 400"):
            await llm.complete(REQUEST)
        await llm.aclose()


async def test_an_adapter_dropped_unclosed_warns_nothing() -> None:
    async with MockLLMServer([MockReply(text="ok")]) as server:
        llm = _adapter(server)
        await llm.complete(REQUEST)
        del llm
        gc.collect()  # warnings are errors in this suite: aiohttp's "Unclosed client session" would fail it


async def test_the_environment_can_ask_for_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STELLATE_HTTP_CLIENT", "httpx")
    async with MockLLMServer([MockReply(text="ok")]) as server:
        llm = _adapter(server)
        assert llm._channel._aio is None
        assert (await llm.complete(REQUEST)).message.content == "ok"
        await llm.aclose()


def test_aiohttp_reads_the_proxy_settings_only_when_the_environment_names_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stellate.llm._http_aiohttp import _proxied

    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert not _proxied()
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert _proxied()


def _timed(server: MockLLMServer, read: float) -> OpenAIAdapter:
    retry = RetryPolicy(max_attempts=2, base_delay=0.01)
    timeout = httpx.Timeout(10.0, read=read)
    return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="test", retry=retry, timeout=timeout)


@pytest.mark.parametrize(
    "failure",
    [{"disconnect_after": 0}, {"first_byte_delay": 1.5}, {"chunk_delay": 1.5}],
    ids=["dropped", "silent-before-its-head", "silent-between-chunks"],
)
async def test_a_first_attempt_dropped_or_silent_too_long_is_asked_again(
    failure: dict[str, float],
) -> None:
    """A dropped connection, or no data for longer than the read timeout: retryable (here before any text)."""
    async with MockLLMServer([MockReply(text="one two", **failure), MockReply(text="again")]) as server:
        llm = _timed(server, read=0.2)
        events = [event async for event in llm.stream(REQUEST)]
        assert _final_text(events) == "again"
        assert len(server.requests) == 2
        await llm.aclose()


async def test_a_caller_slower_than_the_read_timeout_is_not_a_stall() -> None:
    async with MockLLMServer([MockReply(text="one two three four")]) as server:
        llm = _timed(server, read=0.2)
        events: list[StreamEvent] = []
        async for event in llm.stream(REQUEST):
            events.append(event)
            await asyncio.sleep(0.3)  # the caller holds every event longer than the read timeout
        assert _final_text(events) == "one two three four"
        await llm.aclose()


async def test_a_steady_stream_longer_than_the_read_timeout_completes() -> None:
    async with MockLLMServer([MockReply(text=" ".join(["w"] * 12), chunk_delay=0.1)]) as server:
        llm = _timed(server, read=0.3)  # 1.2 s in all, never 0.3 s without a chunk
        events = [event async for event in llm.stream(REQUEST)]
        assert _final_text(events) == " ".join(["w"] * 12)
        await llm.aclose()
