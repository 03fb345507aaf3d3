"""B7 (several server processes on one PostgreSQL) runs end to end at the smallest sizes."""

from __future__ import annotations

import pytest

from bench import workers

pytestmark = pytest.mark.postgres


async def test_turns_through_two_workers_report_latency_and_rate(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "PG_URL", pg_url)
    monkeypatch.setenv("STELLATE_BENCH_PG", pg_url)  # the worker processes read it
    row = await workers.turns(2, 2, 1)
    assert 0 < row["p50"] <= row["p99"] and row["rate"] > 0


async def test_fanout_between_workers_is_measured(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "PG_URL", pg_url)
    monkeypatch.setenv("STELLATE_BENCH_PG", pg_url)  # the worker processes read it
    row = await workers.fanout(2)
    assert 0 <= row["p50"] <= row["p99"] < 10_000
