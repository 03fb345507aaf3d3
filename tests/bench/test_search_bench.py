"""A smoke run of the search benchmark at a tiny size, so `python -m bench.search` keeps working."""

from __future__ import annotations

from bench.search import QUERIES, run


async def test_the_search_benchmark_measures_appends_and_every_query() -> None:
    rows = await run(sessions=60, turns=2, postgres=None)
    assert len(rows) == 2 + len(QUERIES)
    assert all(row.startswith("| SQLite |") and row.endswith(" ms |") for row in rows)
    assert any("Chinese, 4 characters (2 hits)" in row for row in rows), "sessions 0 and 50 hold it"
