"""Fixtures for the llm layer: a loopback mock provider, quick retries, and the optional-extra rule."""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Callable
from types import ModuleType

import pytest

from stellate.llm import RetryPolicy
from stellate.testing.mock_llm import MockLLMServer

#: Retries fast enough for tests and without jitter, so waits are predictable.
QUICK_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=0.0)


@pytest.fixture
async def server() -> AsyncIterator[MockLLMServer]:
    async with MockLLMServer() as running:
        yield running


@pytest.fixture
def require_extra() -> Callable[[str, str], ModuleType]:
    """Import a module of an optional extra; skip when it is missing, except in CI (CI=true), where it fails."""

    def require(module: str, extra: str) -> ModuleType:
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            reason = f"extra {extra!r} is not installed ({module}: {exc})"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"CI must install the {reason}")
            pytest.skip(reason)

    return require
