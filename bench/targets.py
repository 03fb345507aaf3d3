"""The issue's targets, checked against one run's tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench import plan as P
from bench.report import Tables, fmt, fmt_bytes

FLAT = 1.5
"""Per-turn cost at the largest H may be at most this multiple of the cost at the smallest H."""
PEER_FACTOR = 10.0
FLOOR_FACTOR = 3.0
FORK_FLAT = 1.5
FORK_BYTES_SLACK = 512
"""Bytes a fork may grow by between the smallest and largest N (page rounding) on top of the ratio."""


@dataclass
class Verdict:
    name: str
    measured: str
    ok: bool | None

    def row(self) -> str:
        mark = {True: "**pass**", False: "**FAIL**", None: "n/a"}[self.ok]
        return f"| {self.name} | {self.measured} | {mark} |"


def _flat(t: Tables, bench: str, label: str) -> Verdict:
    xs = t.xs(bench)
    name = f"{bench}: per-turn flat, H={xs[-1]:,} ≤ {FLAT}× H={xs[0]:,} ({label})" if xs else bench
    if len(xs) < 2:
        return Verdict(name, "needs two sizes", None)

    def check(row: str) -> tuple[str, bool | None]:
        lo, hi = t.get(bench, row, xs[0]), t.get(bench, row, xs[-1])
        if not lo or not hi:
            return "not run", None
        r = hi.ms / lo.ms
        return f"{fmt(hi.ms)} / {fmt(lo.ms)} ms = {r:.2f}×", r <= FLAT

    measured, ok = check(label)
    return Verdict(name, measured, ok)


def _vs_peers(t: Tables, bench: str, peers: tuple[str, ...]) -> Verdict:
    xs = t.xs(bench)
    if not xs:
        return Verdict(bench, "not run", None)
    x = xs[-1]
    name = f"{bench}: at H={x:,}, ≥ {PEER_FACTOR:.0f}× below the fastest peer"

    def check(row: str) -> tuple[str, bool | None]:
        ours = t.get(bench, row, x)
        theirs = [(c.ms, p) for p in peers if (c := t.get(bench, p, x))]
        if not ours or not theirs:
            return "peers not run", None
        best, who = min(theirs)
        r = best / ours.ms
        return f"{who.split(' +')[0]} {fmt(best)} / {fmt(ours.ms)} ms = {r:.1f}×", r >= PEER_FACTOR

    measured, ok = check(P.STELLATE)
    return Verdict(name, measured, ok)


def _vs_floor(t: Tables, bench: str, floor: str) -> Verdict:
    name = f"{bench}: within {FLOOR_FACTOR:.0f}× of the raw floor (worst H)"

    def check(row: str) -> tuple[str, bool | None]:
        ratios = [(r, x) for x in t.xs(bench) if (r := t.ratio(bench, row, floor, x)) is not None]
        if not ratios:
            return "not run", None
        worst, x = max(ratios)
        return f"{worst:.0f}× at H={x:,}", worst <= FLOOR_FACTOR

    measured, ok = check(P.STELLATE)
    return Verdict(name, measured, ok)


def _fork(t: Tables, bench: str, label: str, *, bytes_too: bool = True) -> list[Verdict]:
    xs = t.xs(bench)
    if len(xs) < 2:
        return []
    lo_x, hi_x = xs[0], xs[-1]

    def time_check(row: str) -> tuple[str, bool | None]:
        lo, hi = t.get(bench, row, lo_x), t.get(bench, row, hi_x)
        if not lo or not hi:
            return "not run", None
        r = hi.ms / lo.ms
        return f"{fmt(hi.ms)} / {fmt(lo.ms)} ms = {r:.2f}×", r <= FORK_FLAT

    def bytes_check(row: str) -> tuple[str, bool | None]:
        lo, hi = t.get(bench, row, lo_x), t.get(bench, row, hi_x)
        if not lo or not hi or lo.bytes is None or hi.bytes is None:
            return "not run", None
        return f"{fmt_bytes(hi.bytes)} vs {fmt_bytes(lo.bytes)}", hi.bytes <= FORK_FLAT * lo.bytes + FORK_BYTES_SLACK

    out = []
    checks = (("time", time_check), ("bytes", bytes_check)) if bytes_too else (("time", time_check),)
    for what, check in checks:
        measured, ok = check(label)
        out.append(Verdict(f"{bench}: fork {what} independent of N={lo_x:,}→{hi_x:,} ({label})", measured, ok))
    return out


COLD_PEER_FACTOR = 10.0
COLD_OWN_FACTOR = 3.0
B3_FACTOR = 1.2
FORK_FLAT_10 = 1.3
WARM_FLOOR_FACTOR = 10.0
WARM_FLAT = 1.2
B4_FACTOR = 2.0
E2E_FACTOR = 1.5


def _cells(t: Tables, bench: str, top: str, bottom: str, x_top: int, x_bottom: int | None = None) -> tuple[Any, Any]:
    return t.get(bench, top, x_top), t.get(bench, bottom, x_top if x_bottom is None else x_bottom)


def _at_most(name: str, top: Any, bottom: Any, limit: float, what: str = "", unit: str = "ms") -> Verdict:
    """Pass when ``top / bottom <= limit``."""
    if not top or not bottom:
        return Verdict(name, "not run", None)
    r = top.ms / bottom.ms
    return Verdict(name, f"{what}{fmt(top.ms)} / {fmt(bottom.ms)} {unit} = {r:.2f}×", r <= limit)


def _cold_vs_langgraph(t: Tables) -> Verdict:
    xs = t.xs("B1")
    name = f"1. cold turn at H={xs[-1]:,} ≥ {COLD_PEER_FACTOR:.0f}× below LangGraph's per-turn time (its faster row)"
    ours = t.get("B1", P.STELLATE_COLD, xs[-1]) if xs else None
    theirs = [c for label in (P.LANGGRAPH, P.LANGGRAPH_COLD) if xs and (c := t.get("B1", label, xs[-1]))]
    if not ours or not theirs:
        return Verdict(name, "not run", None)
    best = min(c.ms for c in theirs)
    r = best / ours.ms
    return Verdict(name, f"LangGraph {fmt(best)} / stellate cold {fmt(ours.ms)} ms = {r:.1f}×", r >= COLD_PEER_FACTOR)


def _goal_rows(t: Tables) -> list[Verdict]:
    b1, b2, b8 = t.xs("B1"), t.xs("B2"), t.xs("B8")
    out: list[Verdict] = []
    if b1:
        lo = b1[0]
        out.append(_cold_vs_langgraph(t))
        cold, warm = _cells(t, "B1", P.STELLATE_COLD, P.STELLATE, lo)
        name = f"1. cold turn at H={lo:,} within {COLD_OWN_FACTOR:.0f}× of the warm turn"
        out.append(_at_most(name, cold, warm, COLD_OWN_FACTOR))
    for label in (P.B3_STELLATE, P.B3_NO_SEGMENTS):
        for x in t.xs("B3"):
            top, floor = _cells(t, "B3", label, P.B3_RAW, x)
            out.append(_at_most(f"2. B3 within {B3_FACTOR}× of the raw floor ({label})", top, floor, B3_FACTOR))
    if len(b2) > 1:
        for label in (P.FORK_COLD, P.FORK_COLD_TURN, P.FORK_AGENT, P.FORK_TURN):
            top, bottom = _cells(t, "B2", label, label, b2[-1], b2[0])
            name = f"3. {label}: N={b2[-1]:,} within {FORK_FLAT_10}× of N={b2[0]:,}"
            out.append(_at_most(name, top, bottom, FORK_FLAT_10))
    if b1:
        warm, floor = _cells(t, "B1", P.STELLATE, P.RAW, b1[0])
        name = f"4. warm turn within {WARM_FLOOR_FACTOR:.0f}× of the raw floor at H={b1[0]:,}"
        out.append(_at_most(name, warm, floor, WARM_FLOOR_FACTOR))
        top, bottom = _cells(t, "B1", P.STELLATE, P.STELLATE, b1[-1], b1[0])
        out.append(_at_most(f"4. warm turn at H={b1[-1]:,} within {WARM_FLAT}× of H={b1[0]:,}", top, bottom, WARM_FLAT))
    for x in t.xs("B4"):
        top, floor = _cells(t, "B4", P.B4_STELLATE, P.B4_RAW, x)
        out.append(_at_most(f"5. B4 digests within {B4_FACTOR:.0f}× of a bare SELECT", top, floor, B4_FACTOR))
    out += _b4_page_rows(t)
    if b8:
        label = f"{P.E2E['stellate']} (CPU)", f"{P.E2E['httpx_floor']} (CPU)"
        top, floor = _cells(t, "B8", label[0], label[1], b8[-1])
        name = f"6. CPU per turn through OpenAIAdapter at H={b8[-1]:,} within {E2E_FACTOR}× of bare httpx"
        out.append(_at_most(name, top, floor, E2E_FACTOR))
    return out + _fresh_rows(t)


def _b4_page_rows(t: Tables) -> list[Verdict]:
    """B4-page (bench/forest_cases.py): each paged read of the big forest beside the same bare SELECT."""
    out = []
    for x in t.xs("B4-page"):
        for key in ("first", "middle", "walk", "topology"):
            top, floor = _cells(t, "B4-page", P.B4_PAGE[key], P.B4_PAGE_RAW[key], x)
            name = f"5. B4-page at S={x:,}: {P.B4_PAGE[key]} within {B4_FACTOR:.0f}× of a bare SELECT"
            out.append(_at_most(name, top, floor, B4_FACTOR))
    return out


FRESH_CLI_FACTOR = 1.5


def _fresh_rows(t: Tables) -> list[Verdict]:
    """Issue 22, goal 3: a fresh process's first turn, and the CLI's start."""
    xs = t.xs("B9")
    if not xs:
        return []
    x, out = xs[-1], []
    ours = t.get("B9", P.FRESH["stellate"], x)
    peers = [(c.ms, label.split(":")[0]) for s in P.PEERS if (c := t.get("B9", label := P.FRESH[s], x))]
    name = f"i22-3. first turn of a fresh process at H={x:,} no slower than the fastest peer's"
    if ours and peers:
        best, who = min(peers)
        out.append(Verdict(name, f"{fmt(ours.ms)} vs {who} {fmt(best)} ms", ours.ms <= best))
    else:
        out.append(Verdict(name, "not run", None))
    floor = t.get("B9", P.CLI_FLOOR, x)
    for label in (P.CLI_HELP, P.CLI_LIST):
        name = f"i22-3. {label.split(' (')[0]} within {FRESH_CLI_FACTOR}× of the floor (import sqlite3, pydantic)"
        out.append(_at_most(name, t.get("B9", label, x), floor, FRESH_CLI_FACTOR))
    return out


CAPACITY_GOAL = 500
CAPACITY_P99_MS = 250.0
CAPACITY_PEER_FACTOR = 5.0
IDLE_STREAM_KIB = 10.0
SOAK_FLAT = 1.10
"""The soak's RSS at the end may be at most this multiple of its RSS after warm-up."""


def _held(t: Tables, bench: str, prefix: str = "") -> tuple[int, str] | None:
    """The largest N at p99 ≤ the goal with no failed turn, and what was measured; None if the rows are absent."""
    xs = [x for x in t.xs(bench) if t.get(bench, prefix + P.CAPACITY_P99, x)]
    if not xs:
        return None
    held = [
        x
        for x in xs
        if (p99 := t.get(bench, prefix + P.CAPACITY_P99, x))
        and p99.ms <= CAPACITY_P99_MS
        and (errors := t.get(bench, prefix + P.CAPACITY_ERRORS, x))
        and errors.ms == 0
    ]
    best = max(held, default=0)
    top = t.get(bench, prefix + P.CAPACITY_P99, xs[-1])
    assert top is not None  # xs holds only sizes with a p99 cell
    return best, f"{best:,} held (p99 at N={xs[-1]:,}: {fmt(top.ms)} ms)"


def _capacity_rows(t: Tables) -> list[Verdict]:
    """Issue 22, goal 2: streamed turns one worker holds, with the model in-process (B10) and over HTTP beside a
    peer (B10-peer)."""
    out = []
    goal = f"at p99 ≤ {CAPACITY_P99_MS:.0f} ms, no error: ≥ {CAPACITY_GOAL}"
    if found := _held(t, "B10"):
        out.append(Verdict(f"i22-2. streamed turns one worker holds {goal}", found[1], found[0] >= CAPACITY_GOAL))
    ours = _held(t, "B10-peer", P.B10_PEER_LABELS["stellate"] + ": ")
    if ours:
        name = f"i22-2. the same, the model over HTTP (stellate serve) {goal}"
        out.append(Verdict(name, ours[1], ours[0] >= CAPACITY_GOAL))
    peer = _held(t, "B10-peer", P.B10_PEER_LABELS["langgraph"] + ": ")
    name = f"i22-2. stellate serve holds ≥ {CAPACITY_PEER_FACTOR:.0f}× the streamed turns langgraph dev holds"
    if ours and peer:
        measured = f"{ours[0]:,} vs {peer[0]:,}" + (f" = {ours[0] / peer[0]:.1f}×" if peer[0] else "")
        out.append(Verdict(name, measured, ours[0] >= CAPACITY_PEER_FACTOR * max(1, peer[0])))
    elif ours:
        out.append(Verdict(name, "not run", None))
    return out


def _server_rows(t: Tables) -> list[Verdict]:
    """Issue 22, goals 2 and 7: streamed turns one worker holds, idle streams, and the soak."""
    out = _capacity_rows(t)
    xs = t.xs("B6-streams")
    if xs and (cell := t.get("B6-streams", P.STREAMS_HELD, xs[-1])):
        name = f"i22-7. an idle SSE stream ≤ {IDLE_STREAM_KIB:.0f} KiB of server RSS (N={xs[-1]:,})"
        out.append(Verdict(name, f"{fmt(cell.ms)} KiB", cell.ms <= IDLE_STREAM_KIB))
    xs = t.xs("B10-soak")
    if xs:
        warm, end = t.get("B10-soak", P.SOAK_WARM, xs[-1]), t.get("B10-soak", P.SOAK_END, xs[-1])
        name = f"i22-7. soak of {xs[-1]:,} turns: RSS at the end ≤ {SOAK_FLAT}× RSS after warm-up"
        out.append(_at_most(name, end, warm, SOAK_FLAT, unit="MiB"))
    return out


# -- B11: big sessions (issue 22, goal 6) --
B11_FLOOR_FACTOR = 2.0
B11_FLAT = 1.5
"""µs per event at the largest N may be at most this multiple of it at the next size (1k carries fixed costs)."""
B11_RECORD_FACTOR = 3.0
B11_MIDDLE_OF_LOAD = 0.75
B11_LAST_OF_LOAD = 1.5


def _big_session_rows(t: Tables) -> list[Verdict]:
    """Export and import linear and within 2× of their floors; a cold context_at reads only what it needs."""
    xs, rows, out = t.xs("B11"), P.B11_ROWS, []
    if not xs:
        return []
    for key in ("export", "import"):
        ratios = [(r, x) for x in xs if (r := t.ratio("B11", rows[key], rows[f"{key}_floor"], x)) is not None]
        name = f"i22-6. {key} within {B11_FLOOR_FACTOR:.0f}× of its floor (worst N)"
        worst = max(ratios, default=None)
        measured = f"{worst[0]:.2f}× at N={worst[1]:,}" if worst else "not run"
        out.append(Verdict(name, measured, worst[0] <= B11_FLOOR_FACTOR if worst else None))
        if len(xs) > 1:
            lo_x, hi_x = xs[1] if len(xs) > 2 else xs[0], xs[-1]
            lo, hi = t.get("B11", rows[key], lo_x), t.get("B11", rows[key], hi_x)
            name = f"i22-6. {key} linear: µs per event at N={hi_x:,} ≤ {B11_FLAT}× N={lo_x:,}"
            if lo and hi:
                per_lo, per_hi = lo.ms * 1000 / lo_x, hi.ms * 1000 / hi_x
                r = per_hi / per_lo
                out.append(Verdict(name, f"{fmt(per_hi)} / {fmt(per_lo)} µs = {r:.2f}×", r <= B11_FLAT))
    for x in xs:
        top, bottom = _cells(t, "B11", rows["ctx_early"], rows["record"], x)
        name = f"i22-6. cold context_at(first call) within {B11_RECORD_FACTOR:.0f}× of a cold record read, N={x:,}"
        out.append(_at_most(name, top, bottom, B11_RECORD_FACTOR))
    x = xs[-1]
    for key, limit in (("ctx_middle", B11_MIDDLE_OF_LOAD), ("ctx_last", B11_LAST_OF_LOAD)):
        top, bottom = _cells(t, "B11", rows[key], rows["load"], x)
        name = f"i22-6. {rows[key]} ≤ {limit}× a cold Session.load, N={x:,}"
        out.append(_at_most(name, top, bottom, limit))
    return out


B6_FLOOR_FACTOR = 1.3
B6_AT_C = 10


def _b6_rows(t: Tables) -> list[Verdict]:
    """Issue 22, goal 1: `stellate serve` on SQLite against the floor app, at C = 10 (the nearest C run)."""
    xs = t.xs("B6")
    if not xs:
        return []
    c = min(xs, key=lambda x: abs(x - B6_AT_C))
    ours, floor = P.B6_LABELS["sqlite"], P.B6_LABELS["floor"]
    cpu, rate = P.B6_PARTS["cpu"], P.B6_PARTS["rate"]
    name = f"i22-1. stellate serve (SQLite): server CPU per turn within {B6_FLOOR_FACTOR}× of the floor app (C={c})"
    out = [_at_most(name, t.get("B6", f"{ours}: {cpu}", c), t.get("B6", f"{floor}: {cpu}", c), B6_FLOOR_FACTOR)]
    name = f"i22-1. stellate serve (SQLite): turns/s within {B6_FLOOR_FACTOR}× of the floor app (C={c})"
    theirs, mine = t.get("B6", f"{floor}: {rate}", c), t.get("B6", f"{ours}: {rate}", c)
    out.append(_at_most(name, theirs, mine, B6_FLOOR_FACTOR, "floor / ours: ", unit="turns/s"))
    return out


def verdicts(t: Tables) -> list[Verdict]:
    """Issue 10's goals (numbered as in the issue), then the flatness and peer targets kept from issue 6."""
    out = _goal_rows(t)
    for bench, peers, floor in (
        ("B1", (P.LANGGRAPH, P.AGENTS), P.RAW),
        ("B5-turn", (P.LANGGRAPH_PG, P.AGENTS_PG), P.RAW_PG),
    ):
        if t.xs(bench):
            out.append(_flat(t, bench, P.STELLATE))
            out.append(_vs_peers(t, bench, peers))
            if bench == "B5-turn":
                out.append(_vs_floor(t, bench, floor))
    for bench in ("B2", "B5-fork"):
        out += _fork(t, bench, P.FORK_AGENT)
        out += _fork(t, bench, P.FORK_STORE)
    out += _fork(t, "B2", P.FORK_COLD)
    return out + _server_rows(t) + _big_session_rows(t) + _b6_rows(t)


def render(t: Tables) -> list[str]:
    rows = verdicts(t)
    if not rows:
        return []
    lines = ["### Targets", "", "| target | measured | verdict |"]
    lines.append("|---|---|---|")
    return lines + [v.row() for v in rows]
