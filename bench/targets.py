"""The issue's targets, checked against one run's tables (src as it is; the prototype fixes in a side column)."""

from __future__ import annotations

from dataclasses import dataclass

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
    fixed: str = "–"

    def row(self) -> str:
        mark = {True: "**pass**", False: "**FAIL**", None: "n/a"}[self.ok]
        return f"| {self.name} | {self.measured} | {mark} | {self.fixed} |"


def _mark(ok: bool | None) -> str:
    return {True: "pass", False: "fail", None: "n/a"}[ok]


def _flat(t: Tables, bench: str, label: str, fixed: str | None) -> Verdict:
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
    verdict = Verdict(name, measured, ok)
    if fixed:
        text, fixed_ok = check(fixed)
        verdict.fixed = f"{text} ({_mark(fixed_ok)})"
    return verdict


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
    text, fixed_ok = check(P.STELLATE_FIXED)
    return Verdict(name, measured, ok, f"{text} ({_mark(fixed_ok)})")


def _vs_floor(t: Tables, bench: str, floor: str) -> Verdict:
    name = f"{bench}: within {FLOOR_FACTOR:.0f}× of the raw floor (worst H)"

    def check(row: str) -> tuple[str, bool | None]:
        ratios = [(r, x) for x in t.xs(bench) if (r := t.ratio(bench, row, floor, x)) is not None]
        if not ratios:
            return "not run", None
        worst, x = max(ratios)
        return f"{worst:.0f}× at H={x:,}", worst <= FLOOR_FACTOR

    measured, ok = check(P.STELLATE)
    text, fixed_ok = check(P.STELLATE_FIXED)
    return Verdict(name, measured, ok, f"{text} ({_mark(fixed_ok)})")


def _fork(t: Tables, bench: str, label: str, fixed: str | None, *, bytes_too: bool = True) -> list[Verdict]:
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
        verdict = Verdict(f"{bench}: fork {what} independent of N={lo_x:,}→{hi_x:,} ({label})", measured, ok)
        if fixed:
            text, fixed_ok = check(fixed)
            verdict.fixed = f"{text} ({_mark(fixed_ok)})"
        out.append(verdict)
    return out


def verdicts(t: Tables) -> list[Verdict]:
    out: list[Verdict] = []
    for bench, peers, floor in (
        ("B1", (P.LANGGRAPH, P.AGENTS), P.RAW),
        ("B5-turn", (P.LANGGRAPH_PG, P.AGENTS_PG), P.RAW_PG),
    ):
        if t.xs(bench):
            out.append(_flat(t, bench, P.STELLATE, P.STELLATE_FIXED))
            out.append(_flat(t, bench, P.STELLATE_TURN, None))
            out.append(_vs_peers(t, bench, peers))
            out.append(_vs_floor(t, bench, floor))
    for bench in ("B2", "B5-fork"):
        out += _fork(t, bench, P.FORK_AGENT, None)
        out += _fork(t, bench, P.FORK_STORE, None)
        out += _fork(t, bench, P.FORK_TURN, P.FORK_TURN_FIXED, bytes_too=False)
    return out


def render(t: Tables) -> list[str]:
    rows = verdicts(t)
    if not rows:
        return []
    lines = ["### Targets", "", "| target | measured (src as is) | verdict | with the proposed fixes (prototype) |"]
    lines.append("|---|---|---|---|")
    return lines + [v.row() for v in rows]
