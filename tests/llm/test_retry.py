from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from stellate.errors import ProviderError, UsageError
from stellate.llm._retry import AttemptFailed, RetryNotice, RetryPolicy, retry_call, retry_stream

QUICK = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01, jitter=0.0)


def transient(status: int = 503) -> AttemptFailed:
    return AttemptFailed(f"HTTP {status}", retryable=True, status_code=status, provider_message="busy")


def test_backoff_doubles_per_failure_up_to_max_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


def test_jitter_only_shortens_the_wait_within_its_fraction() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.5)
    waits = [policy.backoff(2) for _ in range(200)]
    assert all(1.0 <= wait <= 2.0 for wait in waits)
    assert len(set(waits)) > 1


def test_retry_after_replaces_backoff_but_is_capped_at_max_delay() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert policy.backoff(1, retry_after=3.0) == 3.0
    assert policy.backoff(1, retry_after=60.0) == 5.0


@pytest.mark.parametrize("options", [{"max_attempts": 0}, {"base_delay": -1.0}, {"jitter": 1.5}])
def test_impossible_policy_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        RetryPolicy(**options)


async def test_transient_failure_is_retried_until_success() -> None:
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise transient()
        return "ok"

    assert await retry_call(QUICK, attempt) == "ok"
    assert attempts == 3


async def test_exhausted_retries_raise_provider_error_with_status_and_message() -> None:
    async def attempt() -> str:
        raise transient(503)

    with pytest.raises(ProviderError) as caught:
        await retry_call(QUICK, attempt, context={"provider": "openai", "model": "m"})
    details = caught.value.details
    assert details["status_code"] == 503
    assert details["provider_message"] == "busy"
    assert details["attempts"] == 3
    assert details["provider"] == "openai"


async def test_non_retryable_failure_is_raised_after_one_attempt() -> None:
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        raise AttemptFailed("HTTP 400", retryable=False, status_code=400)

    with pytest.raises(ProviderError) as caught:
        await retry_call(QUICK, attempt)
    assert attempts == 1 and caught.value.details["attempts"] == 1


async def test_cancellation_during_backoff_propagates_and_stops_retrying() -> None:
    attempts = 0

    async def attempt() -> str:
        nonlocal attempts
        attempts += 1
        raise AttemptFailed("HTTP 429", retryable=True, retry_after=10.0)

    task = asyncio.create_task(retry_call(RetryPolicy(max_delay=10.0), attempt))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert attempts == 1


async def test_stream_failing_before_its_first_item_is_started_again() -> None:
    opened = 0

    async def open_stream() -> AsyncGenerator[str, None]:
        nonlocal opened
        opened += 1
        if opened == 1:
            raise transient()
        yield "a"
        yield "b"

    assert [item async for item in retry_stream(QUICK, open_stream)] == ["a", "b"]
    assert opened == 2


async def test_stream_failing_after_its_first_item_is_not_retried() -> None:
    opened = 0

    async def open_stream() -> AsyncGenerator[str, None]:
        nonlocal opened
        opened += 1
        yield "a"
        raise transient()

    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for item in retry_stream(QUICK, open_stream):
            seen.append(item)
    assert seen == ["a"] and opened == 1
    assert caught.value.details["partial_output"] is True


async def test_abandoned_stream_closes_the_inner_stream() -> None:
    closed = False

    async def open_stream() -> AsyncGenerator[str, None]:
        nonlocal closed
        try:
            yield "a"
            yield "b"
        finally:
            closed = True

    stream = retry_stream(QUICK, open_stream)
    assert await anext(stream) == "a"
    await stream.aclose()
    assert closed


async def test_every_retry_is_announced_before_its_wait_and_the_last_failure_is_not() -> None:
    notices: list[RetryNotice] = []
    policy = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01, jitter=0.0, on_retry=notices.append)

    async def attempt() -> str:
        raise transient(503)

    with pytest.raises(ProviderError):
        await retry_call(policy, attempt)
    assert [(n.attempt, n.max_attempts, n.status_code) for n in notices] == [(2, 3, 503), (3, 3, 503)]
    assert notices[0].describe() == "retrying in 0.0 s (HTTP 503, attempt 2 of 3)"


async def test_a_stream_retry_names_a_transport_failure_without_a_status() -> None:
    notices: list[RetryNotice] = []
    policy = RetryPolicy(max_attempts=2, base_delay=0.001, max_delay=0.01, jitter=0.0, on_retry=notices.append)
    calls = 0

    async def open_stream() -> AsyncGenerator[str, None]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise AttemptFailed("ReadTimeout: timed out", retryable=True)
        yield "text"

    assert [item async for item in retry_stream(policy, open_stream)] == ["text"]
    [notice] = notices
    assert notice.reason == "ReadTimeout: timed out" and notice.status_code is None and notice.attempt == 2
