"""Fixtures for the llm layer: a loopback mock provider, quick retries, and the optional-extra rule."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stellate.llm import RetryPolicy
from stellate.testing.mock_llm import MockLLMServer

#: Retries fast enough for tests and without jitter, so waits are predictable.
QUICK_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0)


@pytest.fixture
async def server() -> AsyncIterator[MockLLMServer]:
    async with MockLLMServer() as running:
        yield running
