"""Shared test configuration."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture
def require_extra() -> Callable[[str, str], ModuleType]:
    """Import a module of an optional extra; skip when it is missing, except in CI (CI=true), where it fails."""

    def require(module: str, extra: str) -> ModuleType:
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            reason = f"extra {extra!r} is not installed ({module}: {exc})"
            if IN_CI:
                pytest.fail(f"CI must install the {reason}")
            pytest.skip(reason)

    return require
