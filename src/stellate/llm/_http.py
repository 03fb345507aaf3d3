"""httpx plumbing shared by the HTTP adapters: one client per adapter, JSON POST, SSE reading, error mapping.

Bodies arrive encoded (`stellate.llm._wire.dump_json`): an adapter reuses the encoded form of the transcript
from call to call instead of handing httpx a dict to encode whole each time.

Every httpx exception and every error status becomes an `AttemptFailed` here, so the retry loop sees one kind of
failure and no transport exception ever reaches the caller. Importers guard the ``httpx`` import themselves, each
with its own install hint. With aiohttp installed (the ``server`` extra), a channel makes its calls over it
instead (`stellate.llm._http_aiohttp`: the same requests for a fraction of the CPU), unless an httpx client or
transport was injected or ``$STELLATE_HTTP_CLIENT=httpx``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import httpx

from stellate.llm._retry import AttemptFailed

__all__ = ["HTTPChannel", "SSEEvent", "failure_from_status", "parse_retry_after", "parse_sse"]

_ERROR_TEXT_LIMIT = 500
MAX_CONNECTIONS = 1000
"""Provider connections one adapter opens at once: a worker streaming hundreds of turns holds one per turn (a
pool of 100, the clients' default, kept turn 101 waiting for a whole answer before its first chunk)."""
_DRAIN_SECONDS = 1.0
# How providers say a prompt does not fit: OpenAI, llama.cpp's servers and vLLM send OpenAI's code or its
# sentence ("This model's maximum context length is ..."); Anthropic says "prompt is too long".
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_OVERFLOW_TEXT = re.compile(
    r"maximum context length|context window|context length exceeded|prompt is too long", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SSEEvent:
    """One server-sent event."""

    event: str | None
    """The ``event:`` field (Anthropic names its events; OpenAI does not)."""
    data: str
    """The ``data:`` lines joined with newlines."""


class HTTPChannel:
    """POSTs JSON to one provider, owning its `httpx.AsyncClient` unless one is injected.

    Constructing it does no I/O; the client is created on first use and closed by `aclose` (an injected client is
    left to its owner).
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout: float | httpx.Timeout,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {**headers, "Content-Type": "application/json"}
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._client = client
        self._transport = transport
        self._owns_client = client is None
        self._aio: Any = _aiohttp_client(self._headers, self._timeout) if client is None and transport is None else None

    @property
    def base_url(self) -> str:
        """The API root requests go to (without a trailing slash)."""
        return self._base_url

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # As many idle connections kept as open ones: concurrent turns past httpx's default 20 reconnect otherwise.
            limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
            self._client = httpx.AsyncClient(transport=self._transport, timeout=self._timeout, limits=limits)
        return self._client

    async def aclose(self) -> None:
        """Close the client if this channel created it."""
        if self._aio is not None:
            await self._aio.aclose()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def post_json(self, path: str, body: bytes) -> dict[str, Any]:
        """POST ``body`` (encoded JSON) and return the JSON object answered.

        Raises:
            AttemptFailed: Transport failure, error status, or an answer that is not a JSON object.
        """
        if self._aio is not None:
            answer: dict[str, Any] = await self._aio.post_json(self._base_url + path, body)
            return answer
        with _translated_transport_errors():
            response = await self._http().post(
                self._base_url + path, content=body, headers=self._headers, timeout=self._timeout
            )
        if response.status_code >= 400:
            raise failure_from_status(response.status_code, response.headers, response.text)
        try:
            data = response.json()
        except ValueError as exc:
            raise AttemptFailed("provider answered with invalid JSON", retryable=False) from exc
        if not isinstance(data, dict):
            raise AttemptFailed("provider answered with JSON that is not an object", retryable=False)
        return data

    async def stream_sse(self, path: str, body: bytes) -> AsyncGenerator[SSEEvent, None]:
        """POST ``body`` (encoded JSON) and yield the server-sent events of the answer.

        Raises:
            AttemptFailed: Transport failure (also mid-stream) or error status.
        """
        if self._aio is not None:
            async with aclosing(self._aio.stream_lines(self._base_url + path, body)) as lines:
                async with aclosing(parse_sse(lines)) as events:
                    async for event in events:
                        yield event
            return
        with _translated_transport_errors():
            request = self._http().build_request(
                "POST", self._base_url + path, content=body, headers=self._headers, timeout=self._timeout
            )
            response = await self._http().send(request, stream=True)
            try:
                if response.status_code >= 400:
                    await response.aread()
                    raise failure_from_status(response.status_code, response.headers, response.text)
                lines = response.aiter_lines()
                async with aclosing(parse_sse(lines)) as events:
                    try:
                        async for event in events:
                            yield event
                    except GeneratorExit:
                        await _drain(lines)
                        raise
            finally:
                await response.aclose()


def _aiohttp_client(headers: Mapping[str, str], timeout: httpx.Timeout) -> Any:
    """The aiohttp client of a channel, or None (aiohttp not installed, or not wanted)."""
    try:
        from stellate.llm._http_aiohttp import AiohttpClient, aiohttp_wanted
    except ImportError:
        return None
    if not aiohttp_wanted():
        return None
    return AiohttpClient(headers, connect=timeout.connect, read=timeout.read)


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read what is left of an answer whose reader stopped early (at ``[DONE]`` or ``message_stop``).

    A connection goes back to the pool only once its response was read to the end; a server ends the body
    right after its last event, so this is quick. One that holds it open is given up on after
    `_DRAIN_SECONDS`, and its connection is closed instead of reused.
    """
    with suppress(Exception):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in lines:
                pass


@contextmanager
def _translated_transport_errors() -> Iterator[None]:
    try:
        yield
    except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
        raise AttemptFailed(f"{type(exc).__name__}: {exc}", retryable=True) from exc
    except httpx.HTTPError as exc:
        raise AttemptFailed(f"{type(exc).__name__}: {exc}", retryable=False) from exc


def failure_from_status(status: int, headers: Mapping[str, str], text: str) -> AttemptFailed:
    """Build the failure for an HTTP error answer; only 429 and 5xx are worth retrying.

    A 400 or 413 that refuses the prompt as too long for the model's context window gets the code
    ``context_overflow``.
    """
    message, error_code = _error_message(text)
    overflow = status in (400, 413) and (error_code in _OVERFLOW_CODES or _OVERFLOW_TEXT.search(message) is not None)
    return AttemptFailed(
        f"HTTP {status}: {message}",
        retryable=status == 429 or status >= 500,
        status_code=status,
        provider_message=message,
        retry_after=parse_retry_after(headers),
        code="context_overflow" if overflow else None,
    )


def _error_message(text: str) -> tuple[str, str | None]:
    """The message of an error body, and its ``code`` when it names one."""
    # Both OpenAI and Anthropic answer {"error": {"message": ...}}; anything else is shown raw, shortened.
    try:
        data = json.loads(text)
    except ValueError:
        return text[:_ERROR_TEXT_LIMIT] or "(empty body)", None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code")
        return str(error["message"]), code if isinstance(code, str) else None
    if isinstance(error, str):
        return error, None
    return text[:_ERROR_TEXT_LIMIT], None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a provider asked us to wait, from ``retry-after-ms`` (OpenAI) or ``retry-after`` (RFC 9110)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


async def parse_sse(lines: AsyncIterator[str]) -> AsyncGenerator[SSEEvent, None]:
    """Group text lines into server-sent events (https://html.spec.whatwg.org/#event-stream-interpretation).

    An event not closed by a blank line when the stream ends is dropped, as the spec says: it may be cut short.
    """
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield SSEEvent(event=event, data="\n".join(data))
            event, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
