"""How big the next call's prompt is: the token counter's estimate, corrected by the provider's last count.

A `Session` keeps one `PromptEstimator`; `Turn` reads it to decide on compression and feeds it the
provider's count after each call (`calibrate`).
"""

from __future__ import annotations

from stellate.llm.tokens import CachingTokenCounter, default_token_counter
from stellate.llm.types import TokenCounter
from stellate.log.messages import Message
from stellate.session.context import build_prefix
from stellate.session.history import History
from stellate.session.types import Language

__all__ = ["PromptEstimator"]


class PromptEstimator:
    """Token estimates of one session's prompts.

    Args:
        counter: The runtime's token counter; the default counter when None.
        language: Language of the framework's own texts in the prompt (the identity line, the summary's lead).
    """

    def __init__(self, counter: TokenCounter | None, language: Language) -> None:
        # Shared by every estimate of the session, so each message is tokenized once (issue 11).
        self.counter: TokenCounter = CachingTokenCounter(counter or default_token_counter())
        self._language = language
        self._calibration = 0

    def weigh(self, message: Message) -> int:
        """The token count of one message (the weight the history's fold keeps summed)."""
        return self.counter.count((message,))

    @property
    def weigh_key(self) -> str:
        """Names the token counter in stored fold segments (weights of another counter are recomputed)."""
        counter = self.counter
        measuring = counter.counter if isinstance(counter, CachingTokenCounter) else counter
        return type(measuring).__qualname__

    def calibrate(self, offset: int) -> None:
        """Remember how far the estimate was from the provider's count for the last call."""
        self._calibration = offset

    def heuristic(self, history: History) -> int:
        """The token counter's estimate of the next call's prompt, kept incrementally (O(1) in the history)."""
        prefix = build_prefix(history.slots, history.fold.summary, self._language)
        return self.counter.count(prefix + history.fold.open_turn_messages()) + history.fold.kept_weight

    def estimate(self, history: History) -> int:
        """Estimated size of the next call's prompt, corrected by the provider's count of the last call."""
        return self.heuristic(history) + self._calibration
