"""Smoke run of ``python -m bench.tracing`` at a tiny size: every mode runs and the table has a row for it."""

from __future__ import annotations

from bench.tracing import measure, modes, render
from stellate import observability


def test_every_mode_runs_and_leaves_tracing_off() -> None:
    result = measure(turns=3, reps=1)
    assert set(result) == {*modes(), "hooks when off"}
    assert {"off", "no-op provider", "SDK"} <= set(result)  # the dev install has the API and the SDK
    assert all(value > 0 for value in result.values())
    table = render(result, 3, 1)
    assert all(f"| {name} |" in table for name in result)
    assert not observability.is_instrumented()
