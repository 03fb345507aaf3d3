"""Each message is tokenized once: a huge user message costs one count per turn, not one per estimate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from stellate.engine.runner import TurnRunner
from stellate.engine.tools import ToolRegistry, tool
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.llm.tokens import HeuristicTokenCounter, message_text
from stellate.log import Message
from stellate.session import Session, SessionRuntime
from stellate.store.memory import MemoryStore


class SpyCounter:
    """The heuristic counter, recording how often each message text is measured."""

    def __init__(self) -> None:
        self.measured: Counter[str] = Counter()

    def count(self, messages: Sequence[Message]) -> int:
        self.measured.update(message_text(m) for m in messages)
        return HeuristicTokenCounter().count(messages)


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


async def test_a_large_user_message_is_counted_once_across_a_tool_calling_turn() -> None:
    spy = SpyCounter()
    big = "word " * 20_000
    script = [Reply(tool_calls=[tool_call("lookup", {"key": str(i)})]) for i in range(3)] + ["done", "short"]
    llm = ScriptedLLM(script, max_context_tokens=200_000)
    session = await Session.create(MemoryStore(), SessionRuntime(llm=llm, token_counter=spy))
    runner = TurnRunner(session, ToolRegistry([lookup]))
    _ = [e async for e in runner.run(big)]
    _ = [e async for e in TurnRunner(session, ToolRegistry([lookup])).run("and now?")]
    assert len(llm.requests) == 5
    assert spy.measured[big] == 1
    assert max(spy.measured.values()) <= 2  # no message is measured once per step


async def test_reused_counts_give_the_same_estimate() -> None:
    llm = ScriptedLLM(["one", "two"])
    session = await Session.create(MemoryStore(), SessionRuntime(llm=llm, token_counter=SpyCounter()))
    await session.send("first question")
    await session.send("second question")
    fresh = HeuristicTokenCounter().count(session.context())
    assert session.heuristic_prompt_tokens() == fresh
