"""The byte bound answers until an estimate nears a limit; then the tokenizer loads and decides as it always did."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from types import ModuleType

import pytest

from stellate.errors import UsageError
from stellate.llm import tokens
from stellate.llm.scripted import ScriptedLLM
from stellate.llm.tokens import TiktokenCounter
from stellate.llm.types import TokenCounter
from stellate.log import Message
from stellate.session import Session, SessionRuntime, estimates
from stellate.store import BaseStore
from stellate.store.memory import MemoryStore

PAD = "pad " * 40


@pytest.fixture
def exact(require_extra: Callable[[str, str], ModuleType]) -> TiktokenCounter:
    """The offline tokenizer (the default counter when extra ``tokens`` is installed)."""
    require_extra("tiktoken", "tokens")
    counter = tokens.default_token_counter()
    assert isinstance(counter, TiktokenCounter)
    return counter


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch, exact: TiktokenCounter) -> list[int]:
    """New estimators start bounded, as in a fresh process; each load of the default counter is recorded."""
    loaded: list[int] = []

    def load() -> TokenCounter:
        loaded.append(1)
        return exact

    monkeypatch.setattr(estimates, "is_default_counter_loaded", lambda: False)
    monkeypatch.setattr(estimates, "default_token_counter", load)
    return loaded


async def _compressing(store: BaseStore, counter: TokenCounter | None, seen: list[int]) -> Session:
    async def compress(messages: Sequence[Message]) -> str:
        seen.append(len(messages))
        return "SUMMARY"

    llm = ScriptedLLM(default="reply " * 20, max_context_tokens=1000)
    return await Session.create(store, SessionRuntime(llm=llm, compress_fn=compress, token_counter=counter))


def test_a_fresh_process_runs_turns_without_loading_the_tokenizer(exact: TiktokenCounter) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from stellate.llm.scripted import ScriptedLLM
        from stellate.session import Session, SessionRuntime
        from stellate.store.memory import MemoryStore

        async def main():
            store = MemoryStore()
            session = await Session.create(store, SessionRuntime(llm=ScriptedLLM(default="ok")))
            for i in range(5):
                await session.send(f"question {i}")
            again = await Session.load(store, session.id, SessionRuntime(llm=ScriptedLLM(default="ok")))
            await again.send("one more")
            print("tiktoken" in sys.modules, session.estimator.is_exact, again.estimator.is_exact)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "False", "False"], done.stderr


def test_the_byte_bound_is_never_below_the_tokenizer(exact: TiktokenCounter) -> None:
    from stellate.log import AssistantMessage, ToolCall, UserMessage

    texts = ["", "hello world", "日本語のテキスト", "🙂" * 50, "<|endoftext|> x", "def f(x):\n    return x ** 2\n" * 9]
    texts += ["0123456789" * 30, " " * 300, "ünïcödé " * 40, "a"]
    messages: list[Message] = [UserMessage(content=t) for t in texts]
    messages.append(AssistantMessage(content="", tool_calls=(ToolCall(id="c", name="f", arguments='{"q": 1}'),)))
    bound, heuristic = tokens.ByteBoundCounter(), tokens.HeuristicTokenCounter()
    for message in messages:
        assert bound.count([message]) >= exact.count([message]), message
        assert bound.count([message]) >= heuristic.count([message]), message


async def test_compression_triggers_where_the_exact_counter_triggers_it(
    exact: TiktokenCounter, loads: list[int]
) -> None:
    exact_store, bounded_store = MemoryStore(), MemoryStore()
    exact_calls: list[int] = []
    bounded_calls: list[int] = []
    reference = await _compressing(exact_store, exact, exact_calls)
    bounded = await _compressing(bounded_store, None, bounded_calls)
    assert not bounded.estimator.is_exact
    for i in range(12):
        await reference.send(f"question {i} " + PAD)
        await bounded.send(f"question {i} " + PAD)
    assert bounded_calls and bounded_calls == exact_calls
    assert bounded.estimator.is_exact and loads == [1]

    async def compactions(store: BaseStore, session: Session) -> list[int]:
        return [e.seq for e in await store.read_events(session.id, types=["compaction/summary"])]

    assert await compactions(bounded_store, bounded) == await compactions(exact_store, reference)
    assert bounded.context() == reference.context()
    assert bounded.estimate_prompt_tokens() == reference.estimate_prompt_tokens()


async def test_the_tokenizer_loads_only_once_the_bound_passes_the_threshold(loads: list[int]) -> None:
    llm = ScriptedLLM(default="ok", max_context_tokens=100_000)
    session = await Session.create(MemoryStore(), SessionRuntime(llm=llm))
    for i in range(5):
        await session.send(f"question {i}")
    assert not session.estimator.is_exact and loads == []
    # 100,000 bytes pass 0.8 x 100,000 by the bound; as tokens (about 20,000) they are far below it.
    await session.send("word " * 20_000)
    assert session.estimator.is_exact and loads == [1]
    assert not [e for e in await session.store.read_events(session.id) if e.type == "compaction/summary"]


async def test_becoming_exact_gives_the_exact_counters_estimate(exact: TiktokenCounter, loads: list[int]) -> None:
    reference = await Session.create(MemoryStore(), SessionRuntime(llm=ScriptedLLM(default="ok"), token_counter=exact))
    bounded = await Session.create(MemoryStore(), SessionRuntime(llm=ScriptedLLM(default="ok")))
    for session in (reference, bounded):
        await session.put_insight("a hint " * 30)
        for i in range(4):
            await session.send(f"question {i} " + PAD)
    assert not bounded.estimator.is_exact
    assert bounded.estimate_prompt_tokens() == reference.estimate_prompt_tokens()  # re-weighed and re-calibrated
    assert bounded.history.fold.kept_weight == reference.history.fold.kept_weight
    assert bounded.history.weigh_key == "TiktokenCounter"


async def test_an_input_over_the_window_only_by_its_bytes_is_accepted(exact: TiktokenCounter, loads: list[int]) -> None:
    llm = ScriptedLLM(default="ok", max_context_tokens=2000)
    session = await Session.create(MemoryStore(), SessionRuntime(llm=llm))
    await session.send("word " * 500)  # 2,500 bytes, about 500 tokens
    assert session.estimator.is_exact
    with pytest.raises(UsageError) as refused:
        await session.send("word " * 3000)
    assert refused.value.code == "context_too_large"
    assert refused.value.details["needed"] > 2000


async def test_a_bounded_estimate_is_never_below_the_exact_one(exact: TiktokenCounter, loads: list[int]) -> None:
    reference = await Session.create(MemoryStore(), SessionRuntime(llm=ScriptedLLM(default="ok"), token_counter=exact))
    bounded = await Session.create(MemoryStore(), SessionRuntime(llm=ScriptedLLM(default="ok")))
    for i in range(6):
        for session in (reference, bounded):
            await session.send(f"question {i} " + "日本語 " * i + PAD)
        assert not bounded.estimator.is_exact
        found = bounded.estimator.estimate(bounded.history)
        assert found >= reference.estimator.estimate(reference.history)
