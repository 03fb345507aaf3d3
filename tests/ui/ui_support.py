"""Helpers of the browser tests: a real server in a thread, a scripted model that streams slowly, and polling.

The server is uvicorn on 127.0.0.1 (a random free port) in its own thread and event loop; tests reach into
that loop (``server.run(coro)``) to set up sessions or start turns exactly as another client would.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import uvicorn

from stellate import Agent, ForkProfile, tool
from stellate.agent import Reflector
from stellate.llm.scripted import FunctionLLM, Reply, tool_call
from stellate.llm.types import LLMRequest, StreamEvent, TextDelta
from stellate.server import create_app
from stellate.server.keys import KeyRing
from stellate.store.sqlite import SqliteStore

T = TypeVar("T")
STREAMED = (
    "The sum is five. Here is a longer explanation, streamed word by word so that a person watching the page "
    "sees the answer grow while the model is still writing it, before the turn has ended."
)
XSS = (
    "Look: <img src=x onerror=alert(1)> and <script>window.__pwned = 1</script> and ![pic](http://example.com/x.png)"
    " and [click](javascript:alert(1)) but **bold** stays"
)
GATES: dict[str, threading.Event] = {}


def gate(name: str) -> threading.Event:
    """A gate a tool or the model waits on until the test opens it."""
    return GATES.setdefault(name, threading.Event())


async def wait_gate(name: str) -> None:
    event = gate(name)
    while not event.is_set():
        await asyncio.sleep(0.02)


@tool
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return str(a + b)


@tool
async def wait_for_gate() -> str:
    """Wait until the test opens the tool gate."""
    await wait_gate("tool")
    return "through"


def last_user(request: LLMRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


async def answer(request: LLMRequest) -> str | Reply:
    """The scripted model: what it says depends on the last user message and on whether a tool just answered."""
    text = last_user(request)
    after_tool = request.messages[-1].role == "tool"
    if text.startswith("stream"):
        return STREAMED if after_tool else Reply(text="Let me add.", tool_calls=[tool_call("add", {"a": 2, "b": 3})])
    if text.startswith("slow"):
        return (
            "Gate passed." if after_tool else Reply(text="Checking the gate.", tool_calls=[tool_call("wait_for_gate")])
        )
    if text.startswith("fork"):
        if not after_tool:
            return Reply(tool_calls=[tool_call("create_session", {"label": "Side quest", "context": "inherit"})])
        await wait_gate("model")
        return "Forked a side quest."
    if text.startswith("xss"):
        return XSS
    if text.startswith("中文"):
        return "好的，我们继续。"
    if text.startswith("think"):  # nothing streams until the test opens the gate: the page shows it thinks
        await wait_gate("think")
        return "Thought it through."
    return f"echo: {text}"


def reflect(request: LLMRequest) -> str:
    """The reflector's model: an insight for every session whose label starts with "Lit"."""
    found = re.findall(r"\[session_id=([^\]]+)\] (Lit[^:]*):", request.messages[-1].content)
    insights = [{"session_id": sid, "content": f"A note for {label}."} for sid, label in found]
    return json.dumps({"synthesis": "Everything is on track.", "insights": insights})


PROFILES = {
    "critic": ForkProfile(
        system_prompt_fn=lambda variables: f"You critique {variables.get('topic', 'everything')}.",
        system_prompt_mode="preset",
        description="a critic of vars.topic",
    )
}


class SlowStreamLLM(FunctionLLM):
    """A scripted model whose text arrives a word every ``delay`` seconds, as a real provider's would."""

    def __init__(self, delay: float = 0.06) -> None:
        super().__init__(answer, model="ui-test-model", provider="scripted")
        self.delay = delay

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        async for event in super().stream(request):
            if isinstance(event, TextDelta):
                await asyncio.sleep(self.delay)
            yield event


class ServerThread:
    """``stellate``'s app on a real uvicorn in a thread of its own."""

    def __init__(self, db: Path, *, keys: KeyRing | None = None, reflector: Reflector | None = None) -> None:
        self.db = db
        self.keys = keys
        self.llm: Any = SlowStreamLLM()
        """The sessions' model (a test may swap it before `start`)."""
        self.reflector = reflector or Reflector(FunctionLLM(reflect))
        self.with_reflector = True
        """False: the agents have no reflector (set before `start`)."""
        self.loop = asyncio.new_event_loop()
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.agents: dict[str, Agent] = {}
        self.url = ""

    def agent_of(self, store: Any, space: str) -> Agent:
        agent = Agent(
            store,
            llm=self.llm,
            tools=[add, wait_for_gate],
            builtin_tools=["create_session"],
            profiles=PROFILES,
            reflector=self.reflector if self.with_reflector else None,
        )
        self.agents[space] = agent
        return agent

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        store = await SqliteStore.open(f"sqlite:///{self.db}")
        app = create_app(
            self.agent_of(store, "default"),
            spaces=lambda space: self.agent_of(store.in_space(space), space),
            keys=self.keys,
            shutdown_grace=0.2,
        )
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
        task = asyncio.create_task(self.server.serve(sockets=[sock]))
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.started.set()
        await task
        await cancel_leftovers()
        sock.close()
        await store.close()

    def start(self) -> ServerThread:
        GATES.clear()
        self.thread.start()
        if not self.started.wait(20):
            raise RuntimeError("the test server did not start")
        return self

    def stop(self) -> None:
        for event in GATES.values():
            event.set()
        self.loop.call_soon_threadsafe(setattr, self.server, "should_exit", True)
        self.thread.join(20)
        self.loop.close()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``coro`` in the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Start ``coro`` in the server's loop without waiting (a turn that blocks on a gate)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


async def cancel_leftovers() -> None:
    """Cancel what the server left running (the event streams' shutdown watchers), so closing the loop is quiet."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


def poll(check: Callable[[], T], *, timeout: float = 10, every: float = 0.05, what: str = "condition") -> T:
    """``check()``'s first truthy result, retried until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {value!r})")
        time.sleep(every)


def open_ui(page: Any, url: str, route: str = "#/map") -> Any:
    """Load the UI at ``route`` and wait until it has connected and loaded the forest."""
    page.goto(f"{url}/{route}")
    page.wait_for_selector("body[data-ready=true]", timeout=15000)
    return page


def map_ids(page: Any) -> set[str]:
    """Ids of the sessions the star map has placed."""
    return set(page.evaluate("() => window.stellate.map ? [...window.stellate.map.positions.keys()] : []"))
