"""A real MCP server for the tests and the docs, built on the SDK's server side.

``python mcp_server.py`` serves over stdio; ``python mcp_server.py http PORT`` over streamable HTTP on
127.0.0.1:PORT (path ``/mcp``).
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("stellate-test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Kill the server process at once."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await anyio.sleep(seconds)
    return "late"


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("nope")


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the multiply tool and tell the client."""
    server.add_tool(multiply)
    await ctx.session.send_tool_list_changed()
    return "added multiply"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
