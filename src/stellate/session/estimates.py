"""How big the next call's prompt is: the token counter's estimate, corrected by the provider's last count.

A `Session` keeps one `PromptEstimator`; `Turn` reads it to decide on compression and feeds it the
provider's count after each call (`learn`).

Loading the tokenizer costs a fresh process a few hundred milliseconds (issue 22), and most prompts are far from
any limit, so with the default counter an estimator starts **bounded**: it counts UTF-8 bytes
(`ByteBoundCounter`), which is never less than the tokenizer's count. A question asked against a limit
(`count_within`, `estimate_within`) is answered from the bound while the bound stays within the limit (the exact
count is then within it too); only when the bound passes the limit does the estimator become **exact**: it loads
the tokenizer, weighs the history again with it (once, O(kept messages)) and answers exactly from then on. So
every decision (refuse an input, compress) is the one the exact counter makes, and a session far from its
window never loads the tokenizer. Once it is loaded in the process, new estimators start exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stellate.llm.tokens import (
    ByteBoundCounter,
    CachingTokenCounter,
    default_token_counter,
    is_default_counter_loaded,
    may_load_tokenizer,
)
from stellate.llm.types import TokenCounter
from stellate.log.messages import Message
from stellate.session.context import build_prefix
from stellate.session.history import History
from stellate.session.types import Language

__all__ = ["PromptEstimator", "SentEstimate"]


@dataclass(frozen=True, slots=True)
class SentEstimate:
    """The estimate of a prompt as it was sent, for `PromptEstimator.learn` once the provider has counted it."""

    tokens: int
    exact: bool
    """Made by the exact counter (False: by the byte bound)."""
    messages: Sequence[Message]
    """The prompt's messages (counted again exactly if the estimator becomes exact before the next call)."""


class PromptEstimator:
    """Token estimates of one session's prompts.

    Args:
        counter: The runtime's token counter (always exact); the default counter, loaded when first needed, when None.
        language: Language of the framework's own texts in the prompt (the identity line, the summary's lead).
    """

    def __init__(self, counter: TokenCounter | None, language: Language) -> None:
        lazy = counter is None and not is_default_counter_loaded() and may_load_tokenizer()
        # Shared by every estimate of the session, so each message is tokenized once (issue 11).
        self.counter: TokenCounter = CachingTokenCounter(
            ByteBoundCounter() if lazy else counter or default_token_counter()
        )
        self.is_exact = not lazy
        """False while the estimates are the byte bound (the tokenizer not loaded for this session yet)."""
        self._language = language
        self._calibration = 0
        """Provider's count minus the estimate, for the last call (made by the current counter)."""
        self._last: tuple[SentEstimate, int] | None = None
        """The last call's estimate and the provider's count, while the estimator is bounded."""

    def weigh(self, message: Message) -> int:
        """The token count of one message (the weight the history's fold keeps summed)."""
        return self.counter.count((message,))

    @property
    def weigh_key(self) -> str:
        """Names the token counter in stored fold segments (weights of another counter are recomputed)."""
        counter = self.counter
        measuring = counter.counter if isinstance(counter, CachingTokenCounter) else counter
        return type(measuring).__qualname__

    def make_exact(self, history: History) -> None:
        """Count with the exact counter from now on (loading it), and weigh the session's ``history`` again."""
        if self.is_exact:
            return
        self.counter = CachingTokenCounter(default_token_counter())
        self.is_exact = True
        history.reweigh(self.weigh, self.weigh_key)
        if self._last is not None:  # the offset the exact counter would have learnt from the last call
            sent, provider_tokens = self._last
            self._calibration, self._last = provider_tokens - self.counter.count(sent.messages), None

    def calibrate(self, offset: int) -> None:
        """Set how far the estimate was from the provider's count for the last call (0 after a compaction)."""
        self._calibration, self._last = offset, None

    def sent(self, history: History, messages: Sequence[Message]) -> SentEstimate:
        """The estimate of the prompt about to be sent (``messages``, built from ``history``), before the call."""
        return SentEstimate(self.heuristic(history), self.is_exact, messages)

    def learn(self, sent: SentEstimate, provider_tokens: int) -> None:
        """Calibrate on the provider's count of a prompt estimated as ``sent``."""
        if sent.exact == self.is_exact:
            self._calibration = provider_tokens - sent.tokens
            self._last = None if sent.exact else (sent, provider_tokens)
        else:  # became exact during the call: count the sent prompt exactly
            self._calibration, self._last = provider_tokens - self.counter.count(sent.messages), None

    def heuristic(self, history: History) -> int:
        """The token counter's estimate of the next call's prompt, kept incrementally (O(1) in the history)."""
        prefix = build_prefix(history.slots, history.fold.summary, self._language)
        return self.counter.count(prefix + history.fold.open_turn_messages()) + history.fold.kept_weight

    def estimate(self, history: History) -> int:
        """Estimated size of the next call's prompt, corrected by the provider's count of the last call.

        While bounded, only a provider count above the bound corrects it: the bound of the current prompt is then
        never below the exact count, nor (while the prompt only grew since that call) below the exact estimate.
        """
        calibration = self._calibration if self.is_exact else max(self._calibration, 0)
        return self.heuristic(history) + calibration

    def estimate_within(self, history: History, limit: float) -> int:
        """`estimate`, exact whenever it is above ``limit`` (becoming exact if the bound is)."""
        found = self.estimate(history)
        if found > limit and not self.is_exact:
            self.make_exact(history)
            found = self.estimate(history)
        return found

    def count_within(self, messages: Sequence[Message], limit: float, history: History) -> int:
        """Tokens of ``messages``, exact whenever above ``limit`` (becoming exact, for ``history``, if the bound is)."""
        found = self.counter.count(messages)
        if found > limit and not self.is_exact:
            self.make_exact(history)
            found = self.counter.count(messages)
        return found
