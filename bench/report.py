"""Aggregate the runs into markdown tables: stellate next to each peer, ratios, and the targets' verdicts.

A cell is the median over repetitions of each run's median, with the [min-max] of those run medians.
Every ratio divides two cells of the same run (same machine, same minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench import plan as P
from bench.common import median

TITLES = {
    "B1": "B1 — per-turn overhead, file-backed SQLite (ms per turn; H = prior turns)",
    "B2": "B2 — fork, file-backed SQLite (ms per fork; N = events of history, peers get N/6 turns)",
    "B3": "B3 — cold open (ms)",
    "B4": "B4 — digests of a forest (ms for the whole list)",
    "B4-page": "B4-page — the listing and the forest read in pages, beside the same bare SELECT (ms; S = sessions)",
    "B5-turn": "B5 — per-turn overhead on PostgreSQL (ms per turn)",
    "B5-fork": "B5 — fork on PostgreSQL (ms per fork)",
    "B6": "B6 — turns through HTTP, each server in its own process, the mock model (20 ms, streamed) in another; "
    "C = concurrent sessions",
    "B6-streams": "B6 — the space's event stream (SSE) held by N clients at once; one event fanned out to all",
    "B8": "B8 — end to end, real OpenAI-compatible clients against the loopback mock (ms per turn; H = prior turns)",
    "B9": "B9 — a fresh process: its imports, its first turn, the CLI's start (ms; H = prior turns)",
    "B10": "B10 — streamed turns one worker holds (SQLite; a model streaming 100 chunks at 20/s; N = turns at once)",
    "B10-peer": "B10-peer — streamed turns one worker holds, beside a peer: each server in its own process, the model "
    "(100 chunks at 20/s) in another, over HTTP (N = turns at once)",
    "B10-soak": "B10 — a bounded soak of one worker (T = turns in all; stream opens and closes beside them)",
    "B11": "B11 — a big session: export, import, cold context_at (SQLite file; N = events; ms, and µs per event)",
}
AXIS = {
    "B1": "H",
    "B2": "N",
    "B3": "N",
    "B4": "S",
    "B4-page": "S",
    "B5-turn": "H",
    "B5-fork": "N",
    "B6": "C",
    "B6-streams": "N",
    "B8": "H",
    "B9": "H",
    "B10": "N",
    "B10-peer": "N",
    "B10-soak": "T",
    "B11": "N",
}


@dataclass
class Cell:
    ms: float
    lo: float
    hi: float
    bytes: float | None = None
    """Payload bytes (rows and index entries) written per turn (B1) or per fork (B2)."""
    growth: float | None = None
    """File (or relation) growth per turn or per fork: whole pages."""
    file_bytes: float | None = None
    """B1: size of the store after H turns."""

    def text(self) -> str:
        return f"{fmt(self.ms)} [{fmt(self.lo)}–{fmt(self.hi)}]"


def fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "–"
    if abs(value) >= 1 << 20:
        return f"{value / (1 << 20):.1f} MiB"
    if abs(value) >= 10 * 1024:
        return f"{value / 1024:.0f} KiB"
    return f"{value:.0f} B"


def _optional_median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return median(values) if values else None


def aggregate(samples: dict[tuple[str, str, int], list[dict[str, Any]]]) -> dict[tuple[str, str, int], Cell]:
    cells = {}
    for key, runs in samples.items():
        medians = [median(r["ms"]) for r in runs]
        spread = medians if len(runs) > 1 else runs[0]["ms"]  # one process (B3, B4): its own timed runs
        cells[key] = Cell(
            ms=median(medians),
            lo=min(spread),
            hi=max(spread),
            bytes=_optional_median(runs, "bytes") or _optional_median(runs, "bytes_per_turn"),
            growth=_optional_median(runs, "file_growth"),
            file_bytes=_optional_median(runs, "file_bytes"),
        )
    return cells


class Tables:
    """Markdown tables over aggregated cells."""

    def __init__(self, cells: dict[tuple[str, str, int], Cell]) -> None:
        self.cells = cells

    def get(self, bench: str, label: str, x: int) -> Cell | None:
        return self.cells.get((bench, label, x))

    def labels(self, bench: str) -> list[str]:
        seen: dict[str, None] = {}
        for b, label, _ in self.cells:
            if b == bench:
                seen.setdefault(label)
        return list(seen)

    def xs(self, bench: str) -> list[int]:
        return sorted({x for b, _, x in self.cells if b == bench})

    def ratio(self, bench: str, top: str, bottom: str, x: int) -> float | None:
        a, b = self.get(bench, top, x), self.get(bench, bottom, x)
        return a.ms / b.ms if a and b and b.ms > 0 else None

    def timing(self, bench: str) -> list[str]:
        xs, axis = self.xs(bench), AXIS[bench]
        lines = [f"### {TITLES[bench]}", "", f"| system | {' | '.join(f'{axis}={x:,}' for x in xs)} |"]
        lines.append("|---" * (len(xs) + 1) + "|")
        for label in self.labels(bench):
            cells = [self.get(bench, label, x) for x in xs]
            lines.append(f"| {label} | {' | '.join(c.text() if c else '–' for c in cells)} |")
        return lines

    def ratios(self, bench: str, pairs: list[tuple[str, str, str]]) -> list[str]:
        xs = self.xs(bench)
        lines = []
        for name, top, bottom in pairs:
            values = [self.ratio(bench, top, bottom, x) for x in xs]
            if any(v is not None for v in values):
                lines.append(f"| **ratio:** {name} | {' | '.join(f'{fmt(v)}×' if v else '–' for v in values)} |")
        return lines

    def sizes(self, bench: str, first: str, second: str) -> list[str]:
        """Two groups of size columns: ``file`` (B1: size after H turns) or ``bytes``, then ``growth``."""
        xs = self.xs(bench)
        names = {"file": "file", "bytes": "payload bytes", "growth": "file growth"}
        head = [f"{names[first]} @{x:,}" for x in xs] + [f"{names[second]} @{x:,}" for x in xs]
        lines = ["", f"| system | {' | '.join(head)} |", "|---" * (2 * len(xs) + 1) + "|"]
        attribute = {"file": "file_bytes", "bytes": "bytes", "growth": "growth"}
        for label in self.labels(bench):
            cells = [self.get(bench, label, x) for x in xs]
            values = [getattr(c, attribute[g]) if c else None for g in (first, second) for c in cells]
            if all(v is None for v in values):
                continue
            lines.append(f"| {label} | {' | '.join(fmt_bytes(v) for v in values)} |")
        return lines


B1_RATIOS = [
    ("LangGraph / stellate", P.LANGGRAPH, P.STELLATE),
    ("Agents SDK / stellate", P.AGENTS, P.STELLATE),
    ("stellate / raw floor", P.STELLATE, P.RAW),
    ("stellate durability=turn / raw floor", P.STELLATE_TURN, P.RAW),
    ("stellate synchronous=FULL / NORMAL", P.STELLATE_FULL, P.STELLATE),
    ("stellate cold / warm", P.STELLATE_COLD, P.STELLATE),
    ("LangGraph cold / warm", P.LANGGRAPH_COLD, P.LANGGRAPH),
    ("Agents SDK cold / warm", P.AGENTS_COLD, P.AGENTS),
    ("LangGraph cold / stellate cold", P.LANGGRAPH_COLD, P.STELLATE_COLD),
    ("Agents SDK cold / stellate cold", P.AGENTS_COLD, P.STELLATE_COLD),
]
B8_RATIOS = [
    (f"{name}: CPU / bare httpx CPU", f"{P.E2E[system]} (CPU)", f"{P.E2E['httpx_floor']} (CPU)")
    for system, name in (("stellate", "stellate"), ("langgraph", "LangGraph"), ("agents", "Agents SDK"))
]
B9_RATIOS = [
    ("stellate first turn / Agents SDK's", P.FRESH["stellate"], P.FRESH["agents"]),
    ("stellate first turn / LangGraph's", P.FRESH["stellate"], P.FRESH["langgraph"]),
    ("stellate --help / floor", P.CLI_HELP, P.CLI_FLOOR),
    ("stellate sessions list / floor", P.CLI_LIST, P.CLI_FLOOR),
]
FRESH_NOTE = [
    "",
    "Each cell: the median over K new interpreters (one first turn, or one command, each). A first turn opens the",
    "store and runs one turn after the imports; the CLI rows are whole processes, start to exit.",
]
B5_RATIOS = [
    ("LangGraph (PG) / stellate", P.LANGGRAPH_PG, P.STELLATE),
    ("Agents SDK (PG) / stellate", P.AGENTS_PG, P.STELLATE),
    ("stellate / raw PG floor", P.STELLATE, P.RAW_PG),
]
FORK_RATIOS = [
    ("LangGraph / stellate fork_session", P.FORK_LANGGRAPH, P.FORK_AGENT),
    ("Agents SDK / stellate fork_session", P.FORK_AGENTS, P.FORK_AGENT),
    ("LangGraph / stellate store fork", P.FORK_LANGGRAPH, P.FORK_STORE),
    ("Agents SDK / stellate store fork", P.FORK_AGENTS, P.FORK_STORE),
]


SIZE_NOTE = [
    "",
    "file: the store after H turns (WAL folded in). payload bytes: bytes of rows and index entries written per",
    "turn (SQLite ``dbstat`` payload; PostgreSQL ``pg_column_size`` of the rows), averaged over the timed turns.",
]
FORK_NOTE = [
    "",
    "payload bytes: rows and index entries written per fork (SQLite ``dbstat``; PostgreSQL ``pg_column_size``);",
    "file growth: whole pages, averaged over the forks.",
]


def _per_item(t: Tables, bench: str, unit: str) -> list[str]:
    """B3/B4: one column of ms, plus µs per event or per session."""
    lines = [f"### {TITLES[bench]}", "", f"| system | {AXIS[bench]} | ms | µs per {unit} |", "|---|---|---|---|"]
    for label in t.labels(bench):
        for x in t.xs(bench):
            cell = t.get(bench, label, x)
            if cell:
                lines.append(f"| {label} | {x:,} | {cell.text()} | {fmt(cell.ms * 1000 / x)} |")
    return lines


def render(t: Tables) -> list[str]:
    """Every table of the run, targets first."""
    from bench import targets

    lines = targets.render(t)
    for bench, pairs in (("B1", B1_RATIOS), ("B5-turn", B5_RATIOS)):
        if t.xs(bench):
            lines += ["", *t.timing(bench), *t.ratios(bench, pairs), *t.sizes(bench, "file", "bytes"), *SIZE_NOTE]
    for bench in ("B2", "B5-fork"):
        if t.xs(bench):
            lines += ["", *t.timing(bench), *t.ratios(bench, FORK_RATIOS), *t.sizes(bench, "bytes", "growth")]
            lines += FORK_NOTE
    for bench, unit in (("B3", "event"), ("B4", "session"), ("B11", "event")):
        if t.xs(bench):
            lines += ["", *_per_item(t, bench, unit)]
    return lines + _timings_with_notes(t)


def _timings_with_notes(t: Tables) -> list[str]:
    """B8 and B9 (timings and ratios), then B6 (timings): each with its note."""
    lines: list[str] = []
    shown = (
        ("B4-page", [], []),
        ("B8", B8_RATIOS, []),
        ("B9", B9_RATIOS, FRESH_NOTE),
        ("B6", [], SERVER_NOTE),
        ("B6-streams", [], SERVER_NOTE),
        ("B10", [], STREAMING_NOTE),
        ("B10-peer", [], PEER_STREAMING_NOTE),
        ("B10-soak", [], []),
    )
    for bench, pairs, note in shown:
        if t.xs(bench):
            lines += ["", *t.timing(bench), *t.ratios(bench, pairs), *note]
    return lines


SERVER_NOTE = [
    "",
    "Server and client are separate processes on this machine's cores; latency is what the client measures",
    "(request sent to response read), the model's 20 ms included. Cells are medians over repetitions.",
]

PEER_STREAMING_NOTE = [
    "",
    "Each system's own server and OpenAI client, one worker, against the same paced model process; the clients run",
    "in a third process on the same two cores. Capacity: the largest N with p99 ≤ 250 ms and no failed turn.",
]

STREAMING_NOTE = [
    "",
    "Each chunk carries the wall-clock time the model handed it to the server; the client subtracts it from the",
    "time it read the chunk. The model is in the server's process (paced by its event loop), the clients in one",
    "other process on the same two cores: its CPU share shows how much of them the load generator takes.",
]
