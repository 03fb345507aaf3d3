"""Run the benchmarks: ``python -m bench [--quick] [--only B1,B2] [--pg] [--reps N] [--out DIR]``.

Each (system, size) case runs in a fresh process, once per repetition; the tables and the targets' verdicts
are printed and written to ``<out>/results.md`` (``quick.md`` with ``--quick``) with the raw samples as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

from bench import plan
from bench.common import PG_URL, pg_problem
from bench.report import Tables, aggregate, render
from bench.serve_cases import LANGGRAPH_DEV_MISSING, langgraph_executable
from bench.worker import RESULT_PREFIX

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain-core",
    "langchain-openai",
    "openai-agents",
    "openai",
    "sqlalchemy",
    "pydantic",
    "psycopg",
    "tiktoken",
)
_PEER_MODULES = {
    ("langgraph", "sqlite"): ("langgraph", "langgraph.checkpoint.sqlite", "langchain_core"),
    ("langgraph", "pg"): ("langgraph", "langgraph.checkpoint.postgres", "langchain_core", "psycopg"),
    ("agents", "sqlite"): ("agents",),
    ("agents", "pg"): ("agents", "sqlalchemy", "greenlet", "psycopg"),
    ("e2e.langgraph", "sqlite"): ("langgraph", "langgraph.checkpoint.sqlite", "langchain_openai"),
    ("e2e.agents", "sqlite"): ("agents", "openai"),
    ("fresh.langgraph", "sqlite"): ("langgraph", "langgraph.checkpoint.sqlite", "langchain_core"),
    ("fresh.agents", "sqlite"): ("agents",),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes, one repetition, two jobs (< 1 min)")
    size.add_argument("--smoke", action="store_true", help="tiny sizes (seconds): checks that every case runs")
    parser.add_argument("--only", default="", help="B1-B6, B8-B11 (B5-turn, B5-fork); B7 is python -m bench.workers")
    parser.add_argument("--pg", action="store_true", help="also run B5 (PostgreSQL at STELLATE_BENCH_PG)")
    parser.add_argument("--no-peers", action="store_true", help="skip LangGraph and the Agents SDK")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick/--smoke)")
    parser.add_argument("--jobs", type=int, default=None, help="cases run at once (default 1; 2 with --quick)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results", help="directory for the outputs")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per case")
    return parser.parse_args(argv)


def selected(args: argparse.Namespace) -> set[str]:
    if args.only:
        chosen = {b.strip().upper() for b in args.only.split(",") if b.strip()}
        unknown = chosen - {
            "B1",
            "B2",
            "B3",
            "B4",
            "B4-PAGE",
            "B5",
            "B5-TURN",
            "B5-FORK",
            "B6",
            "B8",
            "B9",
            "B10",
            "B10-PEER",
            "B11",
        }
        if unknown:
            raise SystemExit(
                f"unknown benchmark(s) {sorted(unknown)}; "
                "choose from B1-B6, B8-B11, B4-page, B5-turn, B5-fork, B10-peer"
            )
        return chosen
    return {"B1", "B2", "B3", "B4", "B6", "B8", "B9", "B10", "B11"} | ({"B5"} if args.pg else set())


def missing(case: plan.Case, no_peers: bool) -> str | None:
    """Why ``case`` cannot run here, or None."""
    system, db = case.case.split(".")[0], case.params.get("db", "sqlite")
    if system in ("e2e", "fresh") and "peers" in case.needs:
        system = case.case
    if system in plan.PEERS or "peers" in case.needs:
        if no_peers:
            return "--no-peers"
        absent = [m for m in _PEER_MODULES[(system, db)] if importlib.util.find_spec(m) is None]
        if absent:
            return f'{", ".join(absent)} not installed (pip install -e ".[bench]")'
    if "langgraph-dev" in case.needs and langgraph_executable() is None:
        return LANGGRAPH_DEV_MISSING
    if "pg" in case.needs:
        return pg_problem()
    return None


def run_one(case: plan.Case, timeout: float) -> dict[str, Any]:
    """Run ``case`` in a fresh interpreter; returns its result or ``{"error": ...}``."""
    command = [sys.executable, "-m", "bench.worker", json.dumps(case.spec())]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            result["wall_s"] = time.perf_counter() - started
            return result
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {done.returncode}: {tail}"}


def run_all(cases: list[plan.Case], reps: int, jobs: int, timeout: float) -> tuple[dict[Any, list[Any]], list[str]]:
    samples: dict[tuple[str, str, int], list[dict[str, Any]]] = defaultdict(list)
    errors: list[str] = []
    for rep in range(reps):
        todo = [c for c in cases if rep == 0 or not c.once]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(lambda c: run_one(c, timeout), todo))
        for case, result in zip(todo, results, strict=True):
            if "error" in result:
                rows = ", ".join(case.rows.values())
                errors.append(f"{case.bench} {case.case} {case.x:,} ({rows}): {result['error']}")
                continue
            for key, label in case.rows.items():
                samples[(case.bench, label, case.x)].append(result[key] if key else result)
        print(f"repetition {rep + 1}/{reps} done", file=sys.stderr, flush=True)
    return samples, errors


def machine(pg: bool) -> list[str]:
    cpu = next((ln.split(":", 1)[1].strip() for ln in _lines("/proc/cpuinfo") if ln.startswith("model name")), "?")
    mem = next((ln.split()[1] for ln in _lines("/proc/meminfo") if ln.startswith("MemTotal")), "0")
    versions = []
    for name in ("stellate", *PACKAGES):
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    lines = [
        f"- stellate: {_tree()}",
        f"- machine: {os.cpu_count()} cores ({cpu}), {int(mem) / (1 << 20):.1f} GiB memory, {platform.platform()}",
        f"- Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}",
        f"- packages: {', '.join(versions)}",
    ]
    if pg and pg_problem() is None:
        import psycopg

        with psycopg.connect(PG_URL) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        lines.append(f"- PostgreSQL {row[0] if row else '?'} at 127.0.0.1 (synchronous_commit on, the default)")
    return lines


def _tree() -> str:
    """The commit measured, and whether ``src/`` had uncommitted changes (read-only git calls)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown commit"
    dirty = git("status", "--porcelain", "--", "src")
    return f"commit {commit}" + (" with uncommitted changes in src/" if dirty else ", src/ clean")


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = plan.SMOKE if args.smoke else plan.QUICK if args.quick else plan.FULL
    reps = args.reps or (1 if args.quick or args.smoke else 3)
    jobs = args.jobs or (2 if args.quick else 1)
    benches = selected(args)
    cases, skipped = [], []
    for case in plan.cases(sizes, benches):
        reason = missing(case, args.no_peers)
        if reason:
            skipped.append(f"{case.bench} {', '.join(case.rows.values())} ({case.x:,}): skipped, {reason}")
        else:
            cases.append(case)
    measured = machine(any(b.startswith("B5") for b in benches))  # the tree as the run starts
    started = time.perf_counter()
    samples, errors = run_all(cases, reps, jobs, args.timeout)
    wall = time.perf_counter() - started
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    header = [
        f"## stellate benchmarks ({mode} run: {reps} repetition(s), {jobs} job(s), {wall:.0f} s wall)",
        "",
        *measured,
        "",
        "Cells: median over repetitions (one fresh process each) of each run's median, [min–max of those run",
        "medians]; B3 and B4 run once, repeating inside their process: [min–max] of those timings. Ratios divide",
        "cells of this same run.",
        "",
    ]
    body = render(Tables(aggregate(samples)))
    notes = [f"- {line}" for line in sorted(set(skipped)) + errors]
    text = "\n".join(header + body + (["", "### Not measured", "", *notes] if notes else [])) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    name = {"full": "results", "quick": "quick", "smoke": "smoke"}[mode]
    (args.out / f"{name}.md").write_text(text)
    raw = [{"bench": b, "system": s, "x": x, "runs": runs} for (b, s, x), runs in samples.items()]
    (args.out / f"{name}.json").write_text(json.dumps({"samples": raw, "errors": errors, "skipped": skipped}))
    return 1 if errors else 0
