"""Retries for provider calls: exponential backoff with jitter that honours ``retry-after``.

Only transient failures are retried (HTTP 429, 5xx, timeouts, dropped connections); the HTTP layer decides which
by raising `AttemptFailed` with ``retryable`` set. A stream is retried only while it has yielded nothing, so a
caller never sees the same text twice. ``asyncio.CancelledError`` is never caught here: a cancelled call stops at
once, between attempts as well as during one.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from stellate.errors import ProviderError, UsageError

__all__ = ["AttemptFailed", "RetryNotice", "RetryPolicy", "retry_call", "retry_stream"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryNotice:
    """A failed attempt that will be retried: what went wrong, and how long until the next attempt."""

    attempt: int
    """The attempt about to be made (2 after the first failure)."""
    max_attempts: int
    """Attempts allowed in total."""
    wait: float
    """Seconds until that attempt."""
    status_code: int | None
    """The HTTP status of the failure, if it had one."""
    reason: str
    """What failed: ``HTTP 503``, or the transport error when there was no status."""

    def describe(self) -> str:
        """``retrying in 1.1 s (HTTP 503, attempt 2 of 3)``."""
        return f"retrying in {self.wait:.1f} s ({self.reason}, attempt {self.attempt} of {self.max_attempts})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently a provider call is retried.

    The wait before retry ``n`` (1-based) is ``min(max_delay, base_delay * 2 ** (n - 1))``, scaled down by a random
    factor in ``[1 - jitter, 1]`` so that many clients do not retry in lockstep. A ``retry-after`` sent by the
    provider replaces that wait, capped at ``max_delay`` so that a call never hangs longer than configured.
    """

    max_attempts: int = 3
    """Attempts in total, the first included; ``1`` disables retries."""
    base_delay: float = 0.5
    """Seconds to wait before the first retry, before jitter."""
    max_delay: float = 8.0
    """Upper bound of any single wait, ``retry-after`` included."""
    jitter: float = 0.5
    """Fraction of each wait that is randomised, from 0 (none) to 1 (full jitter)."""
    on_retry: Callable[[RetryNotice], None] | None = field(default=None, compare=False)
    """Called before each wait, so that a user watching is told why nothing arrives (the CLI prints it)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise UsageError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise UsageError("retry delays must not be negative")
        if not 0 <= self.jitter <= 1:
            raise UsageError(f"jitter must lie in [0, 1], got {self.jitter}")

    def backoff(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after ``failures`` failed attempts.

        Args:
            failures: Failed attempts so far (1 after the first failure).
            retry_after: Seconds the provider asked for, if it did.
        """
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        wait = min(self.max_delay, self.base_delay * 2.0 ** (failures - 1))
        return wait * (1 - self.jitter * random.random())

    def wait_before_retry(self, failure: AttemptFailed, failures: int) -> float:
        """The wait after ``failures`` failed attempts, announced to `on_retry` first."""
        wait = self.backoff(failures, failure.retry_after)
        if self.on_retry is not None:
            status = failure.status_code
            reason = f"HTTP {status}" if status is not None else " ".join(str(failure).split())
            self.on_retry(
                RetryNotice(
                    attempt=failures + 1,
                    max_attempts=self.max_attempts,
                    wait=wait,
                    status_code=status,
                    reason=reason[:120],
                )
            )
        return wait


class AttemptFailed(Exception):
    """Raised inside an adapter when one attempt fails; the retry loop turns it into `ProviderError`.

    It never leaves the ``llm`` layer.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        provider_message: str | None = None,
        retry_after: float | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.code = code
        """The `ProviderError` code to give up with (``context_overflow``); None for ``provider_error``."""
        self.status_code = status_code
        self.provider_message = provider_message if provider_message is not None else message
        self.retry_after = retry_after


#: What to do about a failure, by its code.
_HINTS = {
    "context_overflow": (
        " (the model's context window is smaller than stellate was told: set the adapter's max_context_tokens,"
        " or the CLI's context_tokens, to the model's window and the history is compressed to fit)"
    ),
}


def _give_up(failure: AttemptFailed, attempts: int, context: Mapping[str, Any], *, partial: bool) -> ProviderError:
    where = f"{context.get('provider', 'provider')} call"
    tail = " after output had started" if partial else ""
    hint = _HINTS.get(failure.code or "", "")
    return ProviderError(
        f"{where} failed after {attempts} attempt(s){tail}: {failure}{hint}",
        code=failure.code,
        status_code=failure.status_code,
        provider_message=failure.provider_message,
        attempts=attempts,
        partial_output=partial,
        **context,
    )


async def retry_call(
    policy: RetryPolicy, attempt: Callable[[], Awaitable[T]], *, context: Mapping[str, Any] | None = None
) -> T:
    """Await ``attempt()`` until it succeeds, retrying transient failures.

    Args:
        policy: Attempts and waits.
        attempt: Makes one attempt; raises `AttemptFailed` on failure.
        context: Extra ``details`` for the final error (``provider``, ``model``).

    Raises:
        ProviderError: The failure was not retryable, or the attempts ran out.
    """
    failures = 0
    while True:
        try:
            return await attempt()
        except AttemptFailed as failure:
            failures += 1
            if not failure.retryable or failures >= policy.max_attempts:
                raise _give_up(failure, failures, context or {}, partial=False) from failure
            wait = policy.wait_before_retry(failure, failures)
        await asyncio.sleep(wait)


async def retry_stream(
    policy: RetryPolicy,
    open_stream: Callable[[], AsyncGenerator[T, None]],
    *,
    context: Mapping[str, Any] | None = None,
) -> AsyncGenerator[T, None]:
    """Yield the items of ``open_stream()``, starting it again on a transient failure before its first item.

    Once an item has been yielded a failure is final: repeating the call would repeat output the caller has
    already seen.

    Raises:
        ProviderError: The failure was not retryable, came after the first item, or the attempts ran out.
    """
    failures = 0
    while True:
        yielded = False
        try:
            async with aclosing(open_stream()) as stream:
                async for item in stream:
                    yielded = True
                    yield item
            return
        except AttemptFailed as failure:
            failures += 1
            if yielded or not failure.retryable or failures >= policy.max_attempts:
                raise _give_up(failure, failures, context or {}, partial=yielded) from failure
            wait = policy.wait_before_retry(failure, failures)
        await asyncio.sleep(wait)
