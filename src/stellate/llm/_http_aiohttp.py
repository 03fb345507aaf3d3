"""The provider calls over aiohttp, when it is installed: the same requests as over httpx, for a fraction of the CPU.

httpx spends most of a streamed call's CPU in its connection pool and its anyio streams (B6 measured 2 ms per
call at 10 concurrent streams, against 0.3 ms over aiohttp); a server making every turn's model call feels it.
`stellate.llm._http.HTTPChannel` uses this client when aiohttp can be imported, no httpx client or transport was
injected, and ``$STELLATE_HTTP_CLIENT`` is not ``httpx``. Behaviour is httpx's: the same headers and body, each
timeout (connect, read) at the channel's value, the proxy variables of the environment, certifi's CA bundle,
every transport failure an `AttemptFailed` (retryable) and every status error mapped by `failure_from_status`.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import os
import re
import ssl
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import aiohttp

from stellate.llm._http import MAX_CONNECTIONS, failure_from_status
from stellate.llm._retry import AttemptFailed

__all__ = ["AiohttpClient", "aiohttp_wanted", "split_lines"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def aiohttp_wanted() -> bool:
    """Whether channels may use aiohttp (``$STELLATE_HTTP_CLIENT=httpx`` says no)."""
    return os.environ.get("STELLATE_HTTP_CLIENT", "").strip().lower() != "httpx"


class AiohttpClient:
    """One provider's `aiohttp.ClientSession`, created on first use (inside the running loop)."""

    def __init__(self, headers: Mapping[str, str], *, connect: float | None, read: float | None) -> None:
        self._headers = dict(headers)
        self._timeout = aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=read)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, ssl=_ssl_context())
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, trust_env=_proxied(), auto_decompress=True
            )
            # An adapter dropped unclosed (as httpx allows) closes its sockets without aiohttp's warning.
            weakref.finalize(self, _close_quietly, connector)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def post_json(self, url: str, body: bytes) -> dict[str, Any]:
        """POST ``body`` (encoded JSON) and return the JSON object answered (as `HTTPChannel.post_json`)."""
        with translated_errors():
            async with self._client().post(url, data=body, headers=self._headers) as response:
                text = await response.text(errors="replace")
        if response.status >= 400:
            raise failure_from_status(response.status, response.headers, text)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise AttemptFailed("provider answered with invalid JSON", retryable=False) from exc
        if not isinstance(data, dict):
            raise AttemptFailed("provider answered with JSON that is not an object", retryable=False)
        return data

    async def stream_lines(self, url: str, body: bytes) -> AsyncGenerator[str, None]:
        """POST ``body`` and yield the text lines of the answer (an error status raises its `AttemptFailed`)."""
        with translated_errors():
            response = await self._client().post(url, data=body, headers=self._headers)
            try:
                if response.status >= 400:
                    text = await response.text(errors="replace")
                    raise failure_from_status(response.status, response.headers, text)
                lines = split_lines(response.content.iter_any())
                try:
                    async for line in lines:
                        yield line
                except GeneratorExit:
                    await _drain(lines)
                    raise
            finally:
                response.release()  # back to the pool once read to the end; closed otherwise


async def split_lines(chunks: AsyncIterator[bytes]) -> AsyncGenerator[str, None]:
    """The text lines of a UTF-8 byte stream, without their line ends (CR LF, CR or LF), as httpx splits them."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    async for chunk in chunks:
        text = pending + decoder.decode(chunk)
        held = ""
        if text.endswith("\r"):  # the "\n" of a "\r\n" may come with the next chunk
            text, held = text[:-1], "\r"
        parts = _LINE_BREAK.split(text)
        pending = parts.pop() + held
        for part in parts:
            yield part
    pending = (pending + decoder.decode(b"", final=True)).removesuffix("\r")
    if pending:
        yield pending


async def _drain(lines: AsyncGenerator[str, None]) -> None:
    """Read the rest of an answer whose reader stopped early, so its connection is reused (1 s at most)."""
    with suppress(Exception):
        async with asyncio.timeout(1.0):
            async for _ in lines:
                pass
    await lines.aclose()


@contextmanager
def translated_errors() -> Iterator[None]:
    """Aiohttp's failures as `AttemptFailed`: transport ones and timeouts retryable, others not."""
    try:
        yield
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as exc:
        raise AttemptFailed(f"{type(exc).__name__}: {exc}", retryable=True) from exc
    except aiohttp.ClientError as exc:
        raise AttemptFailed(f"{type(exc).__name__}: {exc}", retryable=False) from exc


_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "ws_proxy", "wss_proxy")


def _proxied() -> bool:
    """Whether the environment names a proxy (then aiohttp reads it, and ``~/.netrc``, as httpx does).

    Without one, aiohttp is not asked to look: it would look on every request, in two threads.
    """
    return any(name in _PROXY_VARIABLES for name in (key.lower() for key in os.environ))


_SSL: list[ssl.SSLContext] = []


def _ssl_context() -> ssl.SSLContext:
    """Certifi's CA bundle when installed (httpx's default), else the system's."""
    if not _SSL:
        try:
            import certifi

            _SSL.append(ssl.create_default_context(cafile=certifi.where()))
        except ImportError:
            _SSL.append(ssl.create_default_context())
    return _SSL[0]


def _close_quietly(connector: Any) -> None:
    with suppress(Exception):
        connector._close()
