"""A loopback mock of the OpenAI and Anthropic HTTP APIs, for testing adapters through real HTTP.

`MockLLMServer` is a real HTTP/1.1 server on ``127.0.0.1`` with an OS-assigned port. It answers
``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic), streamed (SSE) or not, from a
per-test script queue or a handler callback, and records every request body it receives::

    async with MockLLMServer([MockFailure(status=429, retry_after=0.01), MockReply(text="Hello")]) as server:
        llm = OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="test")
        ...
        assert server.requests[-1].body["messages"][0]["role"] == "system"

Faults: an error status with ``retry-after`` (`MockFailure`), llama.cpp's empty 200 stream for a request it
fails (`MockFailure.empty_stream`, `MockFailure.context_overflow`), a slow first byte and a connection dropped
mid-stream (`MockReply.first_byte_delay`, `MockReply.disconnect_after`), truncated tool-call JSON
(`MockReply.truncate_tool_arguments`) and the odd chunks of OpenAI-compatible servers (`MockReply.quirks`).
It uses only asyncio, so the library needs no web framework to test itself.
"""

from __future__ import annotations

import asyncio
import collections
import http
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias

from stellate.log.messages import ToolCall

__all__ = ["MockFailure", "MockHandler", "MockLLMServer", "MockReply", "MockRequest", "MockStep"]

_ROUTES: dict[str, Literal["openai", "anthropic"]] = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}
_OPENAI_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_OPENAI_OVERFLOW = "context_length_exceeded"  # OpenAI's error code, which llama.cpp's server copies
_ANTHROPIC_ERROR = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


@dataclass(frozen=True, slots=True, kw_only=True)
class MockReply:
    """A successful answer, rendered in whichever API format the request used."""

    text: str = ""
    """Assistant text; streamed one word per chunk."""
    tool_calls: Sequence[ToolCall] = ()
    """Tool calls; ``arguments`` is sent as given, malformed or not (streamed in two pieces)."""
    stop_reason: Literal["stop", "tool_calls", "length"] | None = None
    """Why the model stopped; ``tool_calls`` when there are calls, else ``stop``."""
    input_tokens: int = 12
    """Reported prompt tokens."""
    output_tokens: int | None = None
    """Reported output tokens; ``ceil(chars / 4)`` of the output when omitted."""
    first_byte_delay: float = 0.0
    """Seconds to wait before sending anything (a slow first byte)."""
    chunk_delay: float = 0.0
    """Seconds between two stream events (a model that types), so a reader can watch a reply grow."""
    disconnect_after: int | None = None
    """Drop the connection after this many stream events (0: right after the headers). Non-streamed requests
    are dropped before any answer."""
    truncate_tool_arguments: bool = False
    """Cut every call's arguments in half and report ``length``, like a model that hit its output cap."""
    quirks: bool = False
    """OpenAI streams only: add ``choices: null``, ``choices: []`` and ``delta: null`` chunks, and interleave the
    argument pieces of parallel calls."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MockFailure:
    """An HTTP error answer in the API's error format."""

    status: int = 500
    """HTTP status."""
    message: str = "mock failure"
    """Error message placed in the body."""
    retry_after: float | None = None
    """Value of the ``retry-after`` header, in seconds, if any."""
    first_byte_delay: float = 0.0
    """Seconds to wait before answering."""
    code: str | None = None
    """The error's ``code`` in an OpenAI body (``context_length_exceeded``); the status when omitted."""
    empty_stream: bool = False
    """A streamed request gets ``200`` and a stream that ends without any event instead of the error; only an
    unstreamed request gets the error. llama.cpp's server answers a prompt over its context window this way."""

    @classmethod
    def context_overflow(cls, *, window: int = 2048, requested: int = 3000, empty_stream: bool = True) -> MockFailure:
        """llama.cpp's answer to a prompt longer than its context window: 400 ``context_length_exceeded``.

        Streamed, it is an empty 200 stream (``empty_stream``), as llama.cpp's server sends it.
        """
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested {requested} tokens "
            f"({requested - 256} in the messages, 256 in the completion). "
            "Please reduce the length of the messages or completion."
        )
        return cls(status=400, message=message, code=_OPENAI_OVERFLOW, empty_stream=empty_stream)


MockStep: TypeAlias = MockReply | MockFailure


@dataclass(frozen=True, slots=True, kw_only=True)
class MockRequest:
    """A request the server received."""

    api: Literal["openai", "anthropic"]
    """Which API the path belongs to."""
    path: str
    """Request path, e.g. ``/v1/messages``."""
    headers: Mapping[str, str]
    """Headers, names lower-cased."""
    body: dict[str, Any] = field(default_factory=dict)
    """The decoded JSON body."""

    @property
    def stream(self) -> bool:
        """Whether the client asked for a stream."""
        return bool(self.body.get("stream"))


MockHandler: TypeAlias = Callable[[MockRequest], MockStep | Awaitable[MockStep]]
"""Picks the answer to each request; may be sync or async."""


class MockLLMServer:
    """A loopback HTTP server impersonating OpenAI and Anthropic; use it as an async context manager.

    Args:
        script: Answers consumed one per request, in order.
        handler: Called when the script is empty; without it an empty script answers 400.
        models: Model ids listed by ``GET /v1/models``, as OpenAI-compatible servers list what they serve;
            without any that path answers 404, as some servers do.
    """

    def __init__(
        self, script: Iterable[MockStep] = (), *, handler: MockHandler | None = None, models: Sequence[str] = ()
    ) -> None:
        self._script: collections.deque[MockStep] = collections.deque(script)
        self._handler = handler
        self._models = tuple(models)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.requests: list[MockRequest] = []
        """Every well-formed API request received, in order."""
        self.connections = 0
        """TCP connections accepted so far: a client that pools its connections opens one for many requests."""

    def push(self, *steps: MockStep) -> None:
        """Append answers to the script."""
        self._script.extend(steps)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the Anthropic base URL."""
        if self._server is None:
            raise RuntimeError("MockLLMServer is not running; use `async with MockLLMServer() as server`")
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI base URL (``/v1`` included)."""
        return self.url + "/v1"

    async def start(self) -> None:
        """Listen on an OS-assigned port of ``127.0.0.1``."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def stop(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # start_server runs each connection in a task of its own
        self._connections.add(task)
        self.connections += 1
        try:
            while await self._serve(reader, writer):
                pass  # keep-alive: the next request on the same connection
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # Only stop() cancels a connection task. Ending it quietly keeps asyncio (3.11) from reporting the
            # cancelled task as an "exception in client_connected_cb".
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; True when the connection stays open for another (HTTP/1.1 keep-alive)."""
        try:
            path, headers, raw = await _read_request(reader)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            return False  # the client closed an idle connection
        keep = headers.get("connection", "").lower() != "close"
        if path == "/v1/models" and self._models:
            listed = [{"id": model, "object": "model", "owned_by": "mock"} for model in self._models]
            await _write_json(writer, 200, {"object": "list", "data": listed}, keep=keep)
            return keep
        api = _ROUTES.get(path)
        if api is None:
            await _write_json(writer, 404, {"error": {"message": f"no route {path}"}}, keep=keep)
            return keep
        try:
            body = json.loads(raw)
        except ValueError:
            await _write_json(writer, 400, {"error": {"message": "body is not JSON"}}, keep=keep)
            return keep
        return await self._answer(writer, MockRequest(api=api, path=path, headers=headers, body=body), keep)

    async def _answer(self, writer: asyncio.StreamWriter, request: MockRequest, keep: bool) -> bool:
        self.requests.append(request)
        step = await self._next_step(request)
        await asyncio.sleep(step.first_byte_delay)
        if isinstance(step, MockFailure):
            if step.empty_stream and request.stream:
                await _write_stream(writer, [], None, keep=keep)
            else:
                await _write_failure(writer, request.api, step, keep=keep)
            return keep
        if step.disconnect_after is not None:
            if request.stream:
                payloads = _stream_payloads(request, step)
                await _write_stream(writer, payloads, step.disconnect_after, step.chunk_delay, keep=False)
            return False
        if request.stream:
            await _write_stream(writer, _stream_payloads(request, step), None, step.chunk_delay, keep=keep)
        else:
            await _write_json(writer, 200, _whole_answer(request, step), keep=keep)
        return keep

    async def _next_step(self, request: MockRequest) -> MockStep:
        if self._script:
            return self._script.popleft()
        if self._handler is None:
            return MockFailure(status=400, message="mock_llm: the script is empty and there is no handler")
        step = self._handler(request)
        return await step if inspect.isawaitable(step) else step


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    request_line, *header_lines = head.split("\r\n")
    _, target, _ = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return target.split("?", 1)[0], headers, body


def _status_line(status: int) -> str:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"  # 529, Anthropic's "overloaded", is not a registered status
    return f"HTTP/1.1 {status} {phrase}\r\n"


def _connection_header(keep: bool) -> str:
    return f"Connection: {'keep-alive' if keep else 'close'}\r\n"


async def _write_json(
    writer: asyncio.StreamWriter, status: int, body: object, headers: str = "", *, keep: bool = False
) -> None:
    data = json.dumps(body).encode()
    head = f"{_status_line(status)}Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    writer.write(f"{head}{headers}{_connection_header(keep)}\r\n".encode() + data)
    await writer.drain()


async def _write_failure(writer: asyncio.StreamWriter, api: str, failure: MockFailure, *, keep: bool = False) -> None:
    headers = f"retry-after: {failure.retry_after}\r\n" if failure.retry_after is not None else ""
    if api == "anthropic":
        kind = _ANTHROPIC_ERROR.get(failure.status, "invalid_request_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": failure.message}}
    else:
        kind = "invalid_request_error" if failure.code else "mock_error"
        body = {"error": {"message": failure.message, "type": kind, "code": failure.code or failure.status}}
    await _write_json(writer, failure.status, body, headers, keep=keep)


async def _write_stream(
    writer: asyncio.StreamWriter,
    payloads: list[str],
    disconnect_after: int | None,
    chunk_delay: float = 0.0,
    *,
    keep: bool = False,
) -> None:
    head = "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
    writer.write(f"{_status_line(200)}{head}{_connection_header(keep)}\r\n".encode())
    for count, payload in enumerate(payloads):
        if disconnect_after is not None and count >= disconnect_after:
            return  # closing without the final empty chunk is a broken stream to the client
        if count and chunk_delay:
            await asyncio.sleep(chunk_delay)
        data = payload.encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


# -- rendering -----------------------------------------------------------------------------------------------


def _calls(reply: MockReply) -> list[ToolCall]:
    if not reply.truncate_tool_arguments:
        return list(reply.tool_calls)
    return [ToolCall(id=c.id, name=c.name, arguments=c.arguments[: len(c.arguments) // 2]) for c in reply.tool_calls]


def _stop(reply: MockReply) -> str:
    if reply.truncate_tool_arguments:
        return "length"
    return reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")


def _output_tokens(reply: MockReply) -> int:
    if reply.output_tokens is not None:
        return reply.output_tokens
    return max(1, math.ceil(len(reply.text + "".join(c.arguments for c in reply.tool_calls)) / 4))


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]] if text else []


def _halves(text: str) -> list[str]:
    half = len(text) // 2
    return [piece for piece in (text[:half], text[half:]) if piece]


def _whole_answer(request: MockRequest, reply: MockReply) -> dict[str, Any]:
    model = str(request.body.get("model", "mock"))
    return _anthropic_message(reply, model) if request.api == "anthropic" else _openai_completion(reply, model)


def _stream_payloads(request: MockRequest, reply: MockReply) -> list[str]:
    model = str(request.body.get("model", "mock"))
    if request.api == "anthropic":
        return [f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in _anthropic_events(reply, model)]
    options = request.body.get("stream_options") or {}
    chunks = [json.dumps(chunk) for chunk in _openai_chunks(reply, model, bool(options.get("include_usage")))]
    return [f"data: {chunk}\n\n" for chunk in [*chunks, "[DONE]"]]


def _openai_usage(reply: MockReply) -> dict[str, int]:
    output = _output_tokens(reply)
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": output,
        "total_tokens": reply.input_tokens + output,
    }


def _openai_completion(reply: MockReply, model: str) -> dict[str, Any]:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in _calls(reply)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[_stop(reply)]}
    usage = _openai_usage(reply)
    return {
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": usage,
    }


def _openai_chunks(reply: MockReply, model: str, include_usage: bool) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.quirks:
        chunks += [{**base, "choices": None}, {**base, "choices": []}, chunk(None)]
    chunks += [chunk({"content": word}) for word in _words(reply.text)]
    chunks += [chunk({"tool_calls": [piece]}) for piece in _openai_call_pieces(_calls(reply), reply.quirks)]
    chunks.append(chunk({}, _OPENAI_FINISH[_stop(reply)]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _openai_usage(reply)})
    return chunks


def _openai_call_pieces(calls: list[ToolCall], interleave: bool) -> list[dict[str, Any]]:
    heads = [
        {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}
        for i, c in enumerate(calls)
    ]
    bodies = [[{"index": i, "function": {"arguments": p}} for p in _halves(c.arguments)] for i, c in enumerate(calls)]
    if interleave:
        rounds = max((len(b) for b in bodies), default=0)
        return heads + [b[r] for r in range(rounds) for b in bodies if r < len(b)]
    return [piece for head, body in zip(heads, bodies, strict=True) for piece in (head, *body)]


def _anthropic_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _anthropic_message(reply: MockReply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _anthropic_input(c.arguments)} for c in _calls(reply)
    ]
    return {
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP[_stop(reply)],
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": _output_tokens(reply)},
    }


def _anthropic_events(reply: MockReply, model: str) -> list[tuple[str, dict[str, Any]]]:
    message = {**_anthropic_message(reply, model), "content": [], "stop_reason": None}
    message["usage"] = {"input_tokens": reply.input_tokens, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": message})]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.text:
        deltas = [{"type": "text_delta", "text": word} for word in _words(reply.text)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for call in _calls(reply):
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _halves(call.arguments)]
        blocks.append(({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}, deltas))
    for index, (block, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": _ANTHROPIC_STOP[_stop(reply)], "stop_sequence": None}
    usage = {"output_tokens": _output_tokens(reply)}
    events.append(("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
