"""Tools from MCP servers: register servers by name, and their tools join the agent's tools like any other.

Servers start on first use (the first turn that needs the agent's tools) and stop with the agent. A tool name
that another tool already uses (a local tool, a built-in, or a tool of another server) is namespaced as
``{server}_{tool}``; the others keep their own names. A server that crashes makes its calls return error
results the model can read, and is started again on its next use. When a server announces that its tool list
changed, the list is fetched again before the next turn. The ``mcp`` SDK (extra ``mcp``) is imported only when a
server starts.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeAlias

from stellate import observability
from stellate.engine.tools import ToolContext, ToolResult
from stellate.errors import UsageError
from stellate.llm.types import ToolSpec

if TYPE_CHECKING:
    from stellate.engine._mcp_client import Connection, RemoteTool

__all__ = ["MCPHTTP", "MCPServerSpec", "MCPServers", "MCPStdio", "MCPTool"]

_log = observability.get_logger(__name__)
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPStdio:
    """An MCP server the agent starts as a subprocess and talks to over stdin/stdout."""

    command: str
    """The executable (``python``, ``npx``, ``uvx``...)."""
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """Extra environment variables (added to a minimal safe environment, as the SDK does)."""
    cwd: str | None = None
    errlog: IO[str] | None = None
    """Where the server's stderr goes (the agent's stderr when None)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPHTTP:
    """An MCP server already running, reached over streamable HTTP."""

    url: str
    """The endpoint, such as ``http://127.0.0.1:8000/mcp``."""


MCPServerSpec: TypeAlias = MCPStdio | MCPHTTP


class MCPTool:
    """A tool of an MCP server, as the model sees it (possibly under a namespaced name)."""

    def __init__(self, server: _Server, remote_name: str, name: str, description: str, parameters: dict[str, Any]):
        self._server = server
        self.remote_name = remote_name
        """The tool's name on its server."""
        self.name = name
        self.description = description
        self.parameters = parameters
        self.server = server.name
        """The registered name of the server."""

    def __repr__(self) -> str:
        return f"<MCPTool {self.name!r} of {self.server!r}>"

    def spec(self) -> ToolSpec:
        """The tool as offered to the model."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Call the tool on its server; a server that is down gives an error result (and restarts next time)."""
        return await self._server.call(self.remote_name, arguments)


class _Server:
    """One registered server: its spec, its connection when started, and its last tool list."""

    def __init__(self, name: str, spec: MCPServerSpec, *, start_timeout: float, call_timeout: float) -> None:
        self.name, self.spec = name, spec
        self.start_timeout, self.call_timeout = start_timeout, call_timeout
        self.connection: Connection | None = None
        self.listed: list[RemoteTool] = []
        self.stale = True
        self.lock = asyncio.Lock()

    async def ensure(self) -> None:
        """Start (or restart) the connection and refresh a stale tool list.

        A connection found broken is restarted once at once.

        Raises:
            ConnectionLost: the server cannot be started or reached.
        """
        from stellate.engine._mcp_client import ConnectionLost

        async with self.lock:
            try:
                await self._ensure_once()
            except ConnectionLost:
                if self.connection is not None:
                    await self.connection.close()
                await self._ensure_once()

    async def _ensure_once(self) -> None:
        if self.connection is None or not self.connection.is_alive:
            await self._connect()
        assert self.connection is not None
        if self.stale:
            self.stale = False  # a change announced while listing marks it stale again
            try:
                self.listed = await self.connection.list_tools()
            except BaseException:
                self.stale = True
                raise

    async def _connect(self) -> None:
        from stellate.engine._mcp_client import Connection

        if self.connection is not None:
            await self.connection.close()
            _log.warning("MCP server %r: restarting", self.name)
        self.connection = Connection(
            self.name, self.spec, on_tools_changed=self._mark_stale, call_timeout=self.call_timeout
        )
        self.stale = True
        await self.connection.start(self.start_timeout)
        _log.info("MCP server %r: connected", self.name)

    def _mark_stale(self) -> None:
        self.stale = True

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        from stellate.engine._mcp_client import ConnectionLost, SessionExpired

        try:
            try:
                return await self._call_once(tool, arguments)
            except SessionExpired:  # the server restarted on its own; the call never ran, so it is safe to repeat
                await self._drop()
                return await self._call_once(tool, arguments)
        except ConnectionLost as exc:
            _log.warning("MCP server %r: call of %r failed: %s", self.name, tool, exc)
            await self._drop()
            text = (
                f'The tool "{tool}" could not run: its MCP server "{self.name}" is unavailable ({exc}). '
                "It is being restarted; you may call the tool again."
            )
            return ToolResult(text, is_error=True)

    async def _call_once(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        await self.ensure()
        assert self.connection is not None
        return await self.connection.call(tool, arguments)

    async def _drop(self) -> None:
        async with self.lock:
            if self.connection is not None:
                await self.connection.close()

    async def close(self) -> None:
        async with self.lock:
            if self.connection is not None:
                await self.connection.close()
                self.connection = None
            self.stale = True


class MCPServers:
    """The MCP servers an agent uses, by name.

    Args:
        servers: Servers by name (letters, digits, ``_`` and ``-``; up to 32 characters).
        start_timeout: Seconds a server may take to start and answer the handshake.
        call_timeout: Seconds a tool call may take before it becomes an error result.
    """

    def __init__(
        self,
        servers: Mapping[str, MCPServerSpec] | None = None,
        *,
        start_timeout: float = 30.0,
        call_timeout: float = 60.0,
    ) -> None:
        self._servers: dict[str, _Server] = {}
        self._start_timeout, self._call_timeout = start_timeout, call_timeout
        for name, spec in (servers or {}).items():
            self.add(name, spec)

    def __bool__(self) -> bool:
        return bool(self._servers)

    def names(self) -> list[str]:
        """Registered server names, in registration order."""
        return list(self._servers)

    def is_running(self, name: str) -> bool:
        """Whether server ``name`` is started and its connection up."""
        server = self._servers.get(name)
        return server is not None and server.connection is not None and server.connection.is_alive

    def add(self, name: str, spec: MCPServerSpec) -> None:
        """Register a server (started on first use).

        Raises:
            UsageError: a bad name, a name already registered, or a spec that is not `MCPStdio` or `MCPHTTP`.
        """
        if not _SERVER_NAME.match(name):
            raise UsageError(f"MCP server name {name!r} must be 1-32 letters, digits, '_' or '-'")
        if name in self._servers:
            raise UsageError(f"an MCP server named {name!r} is already registered")
        if not isinstance(spec, MCPStdio | MCPHTTP):
            raise UsageError(f"MCP server {name!r}: expected MCPStdio or MCPHTTP, got {type(spec).__name__}")
        self._servers[name] = _Server(name, spec, start_timeout=self._start_timeout, call_timeout=self._call_timeout)

    async def tools(self, reserved: Collection[str] = ()) -> list[MCPTool]:
        """Every server's tools, servers started (or restarted) and stale lists refreshed first.

        A server that cannot start contributes no tools this time (a warning is logged) and is tried again
        on the next call.

        Args:
            reserved: Names already taken by other tools; a remote tool with one of them is namespaced.
        """
        await asyncio.gather(*(self._ensure(server) for server in self._servers.values()))
        counts: dict[str, int] = {}
        for server in self._servers.values():
            for remote, _, _ in server.listed:
                counts[remote] = counts.get(remote, 0) + 1
        taken = set(reserved)
        found: list[MCPTool] = []
        for server in self._servers.values():
            for remote, description, schema in server.listed:
                clash = counts[remote] > 1 or remote in taken or not _is_valid(remote)
                name = _clean(f"{server.name}_{remote}") if clash else remote
                found.append(MCPTool(server, remote, name, description, schema))
        return found

    async def _ensure(self, server: _Server) -> None:
        from stellate.engine._mcp_client import ConnectionLost

        try:
            await server.ensure()
        except ConnectionLost as exc:
            _log.warning("MCP server %r is unavailable: %s", server.name, exc)
            server.listed = []
            server.stale = True

    async def close(self) -> None:
        """Stop every server (stdio processes exit); they would start again on the next use."""
        await asyncio.gather(*(server.close() for server in self._servers.values()))


def _is_valid(name: str) -> bool:
    return 0 < len(name) <= 64 and not _INVALID.search(name)


def _clean(name: str) -> str:
    return _INVALID.sub("_", name)[:64]
