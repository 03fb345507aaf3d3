"""Tools from real MCP servers (the SDK's server side, ``mcp_server.py``), over stdio and over HTTP on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stellate import Agent, ForkOptions, SessionConfig, tool
from stellate.engine.mcp import MCPHTTP, MCPServers, MCPStdio
from stellate.errors import UsageError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.llm.types import LLMRequest
from stellate.store.memory import MemoryStore

SERVER = str(Path(__file__).with_name("mcp_server.py"))


@pytest.fixture(autouse=True)
def _sdk(require_extra: Callable[[str, str], ModuleType]) -> None:
    require_extra("mcp", "mcp")


def stdio() -> MCPStdio:
    return MCPStdio(command=sys.executable, args=[SERVER])


def calls(*steps: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(tool_calls=[tool_call(name, arguments, id=f"c{n}") for n, (name, arguments) in enumerate(steps)])


def tool_names(request: LLMRequest) -> list[str]:
    return [spec.name for spec in request.tools]


def results(request: LLMRequest) -> list[tuple[str, bool]]:
    return [(m.content, m.is_error) for m in request.messages if m.role == "tool"]


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stdio_server_tools_join_the_agent_and_answer() -> None:
    llm = ScriptedLLM([calls(("add", {"a": 2, "b": 3}), ("fail", {})), "2 + 3 = 5"])
    async with Agent(MemoryStore(), llm=llm, mcp_servers={"calc": stdio()}) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "What is 2 + 3?")
    assert result.content == "2 + 3 = 5"
    assert tool_names(llm.requests[0]) == ["add", "pid", "crash", "slow", "fail", "grow"]
    add = llm.requests[0].tools[0]
    assert add.description == "Add two integers." and add.parameters["required"] == ["a", "b"]
    assert results(llm.requests[1]) == [("5", False), ("Error executing tool fail", True)]


async def test_servers_start_on_first_use_and_stop_with_the_agent() -> None:
    llm = ScriptedLLM([calls(("pid", {})), "ok"])
    agent = Agent(MemoryStore(), llm=llm, mcp_servers={"calc": stdio()})
    root = await agent.create_session()
    assert not agent.mcp.is_running("calc")
    await agent.turn(root.id, "Which process?")
    assert agent.mcp.is_running("calc")
    [(pid, _)] = results(llm.requests[1])
    assert is_running(int(pid))
    await agent.close()
    assert not agent.mcp.is_running("calc")
    assert not is_running(int(pid))


async def test_names_are_namespaced_only_on_collision() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """A local add."""
        return a + b

    llm = ScriptedLLM([calls(("add", {"a": 1, "b": 1}), ("calc_add", {"a": 1, "b": 1})), "ok"])
    servers = {"calc": stdio(), "other": stdio()}
    async with Agent(MemoryStore(), llm=llm, tools=[add], mcp_servers=servers) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "Add")
    names = tool_names(llm.requests[0])
    assert names[0] == "add" and "calc_add" in names and "other_add" in names and "pid" not in names
    assert set(names) >= {"calc_pid", "other_pid", "calc_grow", "other_grow"}
    assert results(llm.requests[1]) == [("2", False), ("2", False)]


async def test_whitelist_and_fork_chain_keep_mcp_tools_by_name(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    llm = ScriptedLLM(default="ok")
    async with Agent(url, llm=llm, mcp_servers={"calc": stdio()}) as agent:
        root = await agent.create_session(config=SessionConfig(tools=["add"]))
        await agent.turn(root.id, "Add")
        child = await agent.fork_session(root.id, ForkOptions(label="Child", tools=["pid", "add"]))
    assert tool_names(llm.requests[0]) == ["add"]
    restarted = ScriptedLLM([calls(("pid", {})), "ok"])
    async with Agent(url, llm=restarted, mcp_servers={"calc": stdio()}) as agent:
        await agent.turn(child.id, "Which process?")
    assert tool_names(restarted.requests[0]) == ["pid", "add"]  # in the order the fork named them
    assert results(restarted.requests[1])[0][0].isdigit()


async def test_a_crashed_server_gives_an_error_result_and_is_restarted() -> None:
    llm = ScriptedLLM([calls(("pid", {})), calls(("crash", {})), calls(("pid", {})), "ok"])
    async with Agent(MemoryStore(), llm=llm, mcp_servers={"calc": stdio()}) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "Crash it")
    assert result.reason == "completed"
    [(first, _)] = results(llm.requests[1])
    crashed = results(llm.requests[2])[-1]
    assert crashed[1] is True and 'MCP server "calc" is unavailable' in crashed[0]
    second = results(llm.requests[3])[-1]
    assert second[1] is False and second[0] != first  # a new process answers
    assert not is_running(int(first))


async def test_the_tool_list_refreshes_when_the_server_says_it_changed() -> None:
    llm = ScriptedLLM([calls(("grow", {})), "grown", calls(("multiply", {"a": 6, "b": 7})), "42"])
    async with Agent(MemoryStore(), llm=llm, mcp_servers={"calc": stdio()}) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "Grow")
        await agent.turn(root.id, "Multiply")
    assert "multiply" not in tool_names(llm.requests[0])
    assert "multiply" in tool_names(llm.requests[2])
    assert results(llm.requests[3])[-1] == ("42", False)


async def test_a_call_past_its_timeout_is_an_error_result() -> None:
    llm = ScriptedLLM([calls(("slow", {"seconds": 30})), calls(("add", {"a": 1, "b": 2})), "ok"])
    servers = MCPServers({"calc": stdio()}, call_timeout=0.5)
    async with Agent(MemoryStore(), llm=llm, mcp_servers=servers) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "Wait")
    [(text, is_error)] = results(llm.requests[1])
    assert (text, is_error) == ("MCP server 'calc' did not answer within 0.5 s; the call was cancelled", True)
    assert results(llm.requests[2])[-1] == ("3", False)  # the server still answers


async def test_an_unreachable_server_offers_no_tools_and_the_turn_goes_on() -> None:
    llm = ScriptedLLM(["fine"])
    servers = MCPServers(
        {"gone": MCPStdio(command=sys.executable, args=["-c", "raise SystemExit(1)"])}, start_timeout=10
    )
    async with Agent(MemoryStore(), llm=llm, mcp_servers=servers) as agent:
        root = await agent.create_session()
        assert (await agent.turn(root.id, "Hi")).content == "fine"
    assert llm.requests[0].tools == ()


def test_server_names_and_specs_are_checked() -> None:
    servers = MCPServers()
    with pytest.raises(UsageError):
        servers.add("bad name", stdio())
    servers.add("ok", stdio())
    with pytest.raises(UsageError):
        servers.add("ok", stdio())
    with pytest.raises(UsageError):
        servers.add("other", "python server.py")  # type: ignore[arg-type]


# -- streamable HTTP on loopback ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_http_server(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the MCP HTTP server exited") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the MCP HTTP server did not start")


@pytest.fixture
def http_port() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    port = free_port()
    processes = [start_http_server(port)]
    yield port, processes
    for process in processes:
        process.kill()
        process.wait()


async def test_http_server_tools_answer_and_survive_a_server_restart(
    http_port: tuple[int, list[subprocess.Popen[bytes]]],
) -> None:
    port, processes = http_port
    llm = ScriptedLLM([calls(("add", {"a": 20, "b": 22})), "42", calls(("pid", {})), "pid"])
    servers = MCPServers({"web": MCPHTTP(url=f"http://127.0.0.1:{port}/mcp")}, call_timeout=10)
    async with Agent(MemoryStore(), llm=llm, mcp_servers=servers) as agent:
        root = await agent.create_session()
        assert (await agent.turn(root.id, "Add")).content == "42"
        assert results(llm.requests[1]) == [("42", False)]
        processes[0].kill()
        processes[0].wait()
        processes.append(start_http_server(port))
        await agent.turn(root.id, "Which process?")
    pid, is_error = results(llm.requests[3])[-1]
    assert (is_error, pid) == (False, str(processes[1].pid))
    assert "add" in tool_names(llm.requests[2])


def test_mcp_servers_without_the_sdk_name_the_extra() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "import stellate, stellate.engine.mcp\n"
        "try:\n    import stellate.engine._mcp_client\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == 'MCP servers need the MCP SDK: pip install "stellate[mcp]"'
