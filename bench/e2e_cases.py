"""B8, end to end: every system with its real OpenAI-compatible client, against the loopback mock provider.

The mock (`bench.mock_server`) runs in a process of its own and answers "ok"; each system sends its whole
history over HTTP on every turn, as it would to a real provider. stellate streams (`Agent.turn` always does)
through `OpenAIAdapter`; LangGraph calls `ChatOpenAI` and the Agents SDK `OpenAIChatCompletionsModel`, both
on the ``openai`` SDK, without streaming (their defaults). The floor is bare httpx posting the very body
stellate's adapter builds for the same turn and reading the stream to its end. Each turn reports its wall
time and this process's CPU time (every thread of it: stellate's SQLite thread counts).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import ms
from bench.fakes import REPLY, USER
from bench.mock_server import mock_server_process
from bench.stellate_cases import Backend, _new_session
from stellate.agent.agent import Agent
from stellate.llm.openai import OpenAIAdapter
from stellate.llm.types import LLMRequest
from stellate.log.messages import UserMessage
from stellate.session.session import Session
from stellate.session.types import SessionRuntime
from stellate.store import SessionId

WINDOW = 1 << 40  # no history here ever reaches the compression threshold


class _Clock:
    """Wall and CPU milliseconds of each timed call."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    async def atime(self, call: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        out = await call()
        self.wall.append(ms(time.perf_counter() - wall))
        self.cpu.append(ms(time.process_time() - cpu))
        return out

    def time(self, call: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()
        self.wall.append(ms(time.perf_counter() - wall))
        self.cpu.append(ms(time.process_time() - cpu))
        return out

    def result(self) -> dict[str, Any]:
        return {"wall": {"ms": self.wall}, "cpu": {"ms": self.cpu}}


def _adapter(url: str) -> OpenAIAdapter:
    return OpenAIAdapter("mock", base_url=f"{url}/v1", api_key="bench", max_context_tokens=WINDOW)


async def stellate(params: dict[str, Any]) -> dict[str, Any]:
    """K timed `Agent.turn` calls through `OpenAIAdapter` after H prior turns."""
    h, k = params["h"], params["k"]
    backend = Backend(params)
    store = await backend.open()
    sid = await _new_session(store, h)
    clock = _Clock()
    with mock_server_process() as url:
        llm = _adapter(url)
        agent = Agent(store, llm=llm)
        for _ in range(2):
            await agent.turn(sid, USER)
        result = None
        for _ in range(k):
            result = await clock.atime(lambda: agent.turn(sid, USER))
        await llm.aclose()
    await store.close()
    assert result is not None and result.content == REPLY
    return clock.result()


async def httpx_floor(params: dict[str, Any]) -> dict[str, Any]:
    """K posts of the body stellate's adapter builds for a turn after H turns, each stream read to its end."""
    backend = Backend(params)
    store = await backend.open()
    sid = await _new_session(store, params["h"])
    session = await Session.load(store, SessionId(sid), SessionRuntime(llm=_adapter("http://unused")))
    messages = [*session.context(), UserMessage(content=USER)]
    await store.close()
    clock = _Clock()
    with mock_server_process() as url:
        body = _adapter(url).build_body(LLMRequest(messages=messages), stream=True)
        async with httpx.AsyncClient(timeout=60.0) as client:

            async def post() -> int:
                lines = 0
                async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                    async for _ in response.aiter_lines():
                        lines += 1
                return lines

            await post()
            for _ in range(params["k"]):
                assert await clock.atime(post) > 0
    return clock.result()


def langgraph(params: dict[str, Any]) -> dict[str, Any]:
    """K timed ``graph.invoke`` turns with `ChatOpenAI` after H prior turns (bulk)."""
    import sqlite3

    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.sqlite import SqliteSaver

    from bench.langgraph_cases import _history, build_graph

    config = {"configurable": {"thread_id": "bench"}}
    clock = _Clock()
    conn = sqlite3.connect(str(Path(params["dir"]) / "langgraph.db"), check_same_thread=False)
    with mock_server_process() as url:
        model = ChatOpenAI(model="mock", base_url=f"{url}/v1", api_key="bench")
        graph = build_graph(SqliteSaver(conn), model=model)
        graph.update_state(config, {"messages": _history(params["h"])}, as_node="chat")
        for _ in range(2):
            graph.invoke({"messages": [HumanMessage(USER)]}, config)
        state = None
        for _ in range(params["k"]):
            state = clock.time(lambda: graph.invoke({"messages": [HumanMessage(USER)]}, config))
    conn.close()
    assert state is not None and state["messages"][-1].content == REPLY
    return clock.result()


async def agents(params: dict[str, Any]) -> dict[str, Any]:
    """K timed ``Runner.run`` turns with `OpenAIChatCompletionsModel` after H prior turns (bulk)."""
    from agents import Agent as SdkAgent
    from agents import OpenAIChatCompletionsModel, Runner, SQLiteSession, set_tracing_disabled
    from openai import AsyncOpenAI

    from bench.agents_cases import _history

    set_tracing_disabled(True)
    session = SQLiteSession("s1", db_path=Path(params["dir"]) / "agents.db")
    await session.add_items(await _history(params["h"]))
    clock = _Clock()
    with mock_server_process() as url:
        client = AsyncOpenAI(base_url=f"{url}/v1", api_key="bench")
        agent = SdkAgent(name="bench", model=OpenAIChatCompletionsModel(model="mock", openai_client=client))
        for _ in range(2):
            await Runner.run(agent, USER, session=session)
        result = None
        for _ in range(params["k"]):
            result = await clock.atime(lambda: Runner.run(agent, USER, session=session))
        await client.close()
    session.close()
    assert result is not None and result.final_output == REPLY
    return clock.result()
