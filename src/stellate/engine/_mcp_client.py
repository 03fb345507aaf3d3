"""One live connection to an MCP server, through the official ``mcp`` SDK (extra ``mcp``).

The SDK's transports and sessions are anyio contexts that must be entered and left by one task, so each
connection runs in a task of its own (the supervisor) that opens the transport and the session, then waits to
be stopped; tool calls are made from any task through the session it publishes.
"""

from __future__ import annotations

try:
    import mcp
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/engine/test_mcp.py
    raise ImportError('MCP servers need the MCP SDK: pip install "stellate[mcp]"') from exc

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio

from stellate import observability
from stellate.engine.tools import ToolResult

__all__ = ["Connection", "ConnectionLost", "RemoteTool", "SessionExpired"]

_log = observability.get_logger("stellate.engine.mcp")

# JSON-RPC code the SDK gives a request whose connection closed under it (mcp_types.CONNECTION_CLOSED).
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001  # mcp_types.REQUEST_TIMEOUT
# What streamable-HTTP servers answer (HTTP 404) to a session id they do not know, e.g. after a restart.
_SESSION_GONE = re.compile(r"session (not found|terminated|expired)", re.IGNORECASE)
_LOST = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError, OSError)


class ConnectionLost(Exception):
    """The server went away (crashed, exited, or its connection broke) during a request."""


class SessionExpired(ConnectionLost):
    """An HTTP server no longer knows this client's session (it restarted): the request did not run."""


RemoteTool = tuple[str, str, dict[str, Any]]
"""A tool as the server lists it: (name, description, input schema)."""


class Connection:
    """A started connection to one MCP server.

    Args:
        label: The server's registered name (for messages and logs).
        spec: `MCPStdio` or `MCPHTTP` (typed loosely: this module is imported only once the SDK is there).
        on_tools_changed: Called when the server announces that its tool list changed.
        call_timeout: Seconds a tool call may take.
    """

    def __init__(self, label: str, spec: Any, *, on_tools_changed: Callable[[], None], call_timeout: float) -> None:
        self.label = label
        self._spec = spec
        self._on_tools_changed = on_tools_changed
        self._call_timeout = call_timeout
        self._session: ClientSession | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def is_alive(self) -> bool:
        """Whether the connection is up (it may still have broken since the last request)."""
        return self._session is not None and self._task is not None and not self._task.done()

    async def start(self, timeout: float) -> None:
        """Start the server (or connect to it) and finish the MCP handshake.

        Raises:
            ConnectionLost: the server could not be started or reached, or did not answer in ``timeout`` s.
        """
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._serve(ready), name=f"mcp {self.label}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, ConnectionLost | asyncio.CancelledError):
                raise
            raise ConnectionLost(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._on_message))
                await session.initialize()
                self._session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # the supervisor reports to whoever waits for the start; nothing else awaits it
            if not ready.done():
                ready.set_exception(ConnectionLost(_describe(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                _log.warning("MCP server %r: connection ended (%s)", self.label, _describe(exc))
        finally:
            self._session = None

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        spec = self._spec
        if hasattr(spec, "url"):
            return streamable_http_client(spec.url)
        params = StdioServerParameters(
            command=spec.command, args=list(spec.args), env=dict(spec.env) if spec.env else None, cwd=spec.cwd
        )
        return stdio_client(params, errlog=spec.errlog or _stderr())

    async def _on_message(self, message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            self._on_tools_changed()

    async def list_tools(self) -> list[RemoteTool]:
        """The server's tools, every page.

        Raises:
            ConnectionLost: the connection broke.
        """
        session = self._require()
        tools: list[RemoteTool] = []
        cursor: str | None = None
        while True:
            params = mcp.types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._guard(session.list_tools(params=params))
            tools.extend((t.name, t.description or "", dict(t.input_schema)) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call tool ``name``; the server's error results stay error results.

        Raises:
            ConnectionLost: the connection broke before the answer came.
        """
        session = self._require()
        try:
            result = await self._guard(session.call_tool(name, arguments, read_timeout_seconds=self._call_timeout))
        except MCPError as exc:  # a protocol-level refusal (unknown tool, bad params, timeout): the model reads it
            if exc.code == _REQUEST_TIMEOUT:
                text = (
                    f"MCP server {self.label!r} did not answer within {self._call_timeout:g} s; the call was cancelled"
                )
                return ToolResult(text, is_error=True)
            return ToolResult(f"MCP server {self.label!r} refused the call: {exc.message}", is_error=True)
        return ToolResult(_result_text(result), is_error=bool(result.is_error))

    async def _guard(self, request: Any) -> Any:
        try:
            return await request
        except MCPError as exc:
            if exc.code == _CONNECTION_CLOSED:
                raise ConnectionLost(exc.message) from exc
            if _SESSION_GONE.search(exc.message):
                raise SessionExpired(exc.message) from exc
            raise
        except _LOST as exc:
            raise ConnectionLost(_describe(exc)) from exc

    def _require(self) -> ClientSession:
        if self._session is None:
            raise ConnectionLost("not connected")
        return self._session

    async def close(self) -> None:
        """Stop the connection (and the server process, for stdio); safe to call twice."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except TimeoutError:
                task.cancel()
                await asyncio.wait([task])
        self._session = None


def _stderr() -> Any:
    """Our stderr for the server's, when it is a real file; else nowhere (a notebook's or pytest's stand-in)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL
    return sys.stderr


def _result_text(result: Any) -> str:
    """A ``CallToolResult`` as text for the model: its text parts, else its structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} content ({block.mime_type}) not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            parts.append(getattr(block.resource, "text", None) or f"[resource {block.resource.uri}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
