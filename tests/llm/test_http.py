"""Shared HTTP plumbing: SSE framing, error mapping and retry-after parsing."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import pytest

from stellate.llm._http import SSEEvent, failure_from_status, parse_retry_after, parse_sse


async def lines(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item


async def test_sse_groups_fields_into_events_and_ignores_comments() -> None:
    source = lines(": keep-alive", "event: ping", "data: {}", "", "data: a", "data: b", "")
    assert [event async for event in parse_sse(source)] == [
        SSEEvent(event="ping", data="{}"),
        SSEEvent(event=None, data="a\nb"),
    ]


async def test_sse_drops_an_event_cut_off_by_the_end_of_the_stream() -> None:
    assert [event async for event in parse_sse(lines("data: whole", "", 'data: {"half'))] == [
        SSEEvent(event=None, data="whole")
    ]


@pytest.mark.parametrize(("status", "retryable"), [(429, True), (500, True), (529, True), (400, False), (404, False)])
def test_only_429_and_5xx_are_retryable(status: int, retryable: bool) -> None:
    assert failure_from_status(status, {}, "").retryable is retryable


def test_provider_error_message_is_taken_from_the_error_body() -> None:
    failure = failure_from_status(400, {}, '{"error": {"message": "max_tokens too large"}}')
    assert failure.provider_message == "max_tokens too large" and failure.status_code == 400


def test_retry_after_accepts_milliseconds_seconds_and_http_dates() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": later}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
