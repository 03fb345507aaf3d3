"""What model calls cost, on the command line: the price table, ``stellate sessions usage``, the chat's turn line.

Prices come from the config file's ``[prices]`` table and ``--price MODEL=INPUT,OUTPUT`` flags (which win, model
by model); stellate ships none. An unknown token count or cost is shown as ``—``, never as 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from stellate.cli.invocation import Invocation
from stellate.cli.lookup import resolve_session

if TYPE_CHECKING:
    from rich.table import Table

    from stellate.agent import Agent, Price
    from stellate.agent.usage_report import UsageReport
    from stellate.cli.settings import ConfigFile
    from stellate.log.usage import UsageTotals

__all__ = ["UNKNOWN", "add_price_option", "add_usage_parser", "configured_prices", "turn_line", "usage"]

UNKNOWN = "—"


def add_price_option(parser: argparse.ArgumentParser) -> None:
    """``--price MODEL=INPUT,OUTPUT``, repeatable."""
    parser.add_argument(
        "--price",
        action="append",
        default=argparse.SUPPRESS,
        metavar="MODEL=IN,OUT",
        help="price per million input and output tokens, e.g. gpt-4o-mini=0.15,0.6 (repeatable; wins over the "
        "config file's [prices])",
    )


def configured_prices(file: ConfigFile, flags: Sequence[str]) -> dict[str, Price]:
    """The price table: the config file's, then each ``--price`` flag."""
    from stellate.agent.prices import Price, merge_prices, parse_price

    from_file = {model: Price(input=p.input, output=p.output) for model, p in file.prices.items()}
    return merge_prices(from_file, dict(parse_price(flag) for flag in flags))


def add_usage_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``sessions usage``."""
    usage_parser = actions.add_parser(
        "usage",
        parents=[common],
        help="tokens, latency and cost of each model call, per turn and in total",
        description="A fork's inherited calls belong to its source: its total counts only its own calls.",
    )
    usage_parser.add_argument("id", help="session id, id prefix or label")
    add_price_option(usage_parser)
    usage_parser.set_defaults(handler=usage)


async def usage(inv: Invocation) -> int:
    """Print each model call of a session, the per-turn totals and the session's total."""
    from rich.text import Text

    out = inv.consoles.out
    async with inv.open() as (store, agent):
        session_id = await resolve_session(store, inv.args.id)
        report = await agent.usage_report(session_id)
    if not report.calls:
        out.print(f"{session_id} has made no model call yet")
        return 0
    out.print(_calls_table(report))
    own, theirs = report.own, report.inherited
    out.print(f"total: {_totals_text(own, report.own_cost)}", soft_wrap=True)
    if theirs.calls:
        inherited = _totals_text(theirs, report.inherited_cost)
        out.print(Text(f"inherited from the source (not in the total): {inherited}", "dim"), soft_wrap=True)
    return 0


def _calls_table(report: UsageReport) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold")
    for name in ("seq", "turn", "step", "model", "in", "out", "latency", "first token", "stop", "cost"):
        table.add_column(
            name,
            justify="left" if name in ("model", "stop") else "right",
            overflow="fold" if name == "model" else "ellipsis",
        )
    for row in report.calls:
        call = row.usage
        cells = [
            str(row.seq),
            f"{call.turn}{' (inherited)' if row.inherited else ''}",
            str(call.step),
            f"{call.provider}/{call.model}",
            _count(call.input_tokens),
            _count(call.output_tokens),
            f"{call.latency_ms} ms",
            UNKNOWN if call.ttft_ms is None else f"{call.ttft_ms} ms",
            call.stop_reason or UNKNOWN,
            _cost(row.cost),
        ]
        table.add_row(*(Text(cell) for cell in cells), style="dim" if row.inherited else None)
    return table


def _count(tokens: int | None) -> str:
    return UNKNOWN if tokens is None else f"{tokens:,}"


def _cost(cost: float | None) -> str:
    if cost is None:
        return UNKNOWN
    return f"{cost:.6f}".rstrip("0").rstrip(".") if cost else "0"


def _totals_text(totals: UsageTotals, cost: float | None) -> str:
    calls = f"{totals.calls} call{'s' if totals.calls != 1 else ''}"
    tokens = f"{_count(totals.input_tokens)} in / {_count(totals.output_tokens)} out tokens"
    return f"{calls}, {tokens}, {totals.latency_ms} ms, cost {_cost(cost)}"


async def turn_line(agent: Agent, session_id: str, turn: int) -> str | None:
    """The chat's line after a turn: its calls' tokens, time and cost (None when the turn made no call)."""
    from stellate.agent.prices import call_cost, sum_costs
    from stellate.log.usage import MODEL_CALLED, call_usage, usage_totals
    from stellate.store import SessionId

    store = await agent.store()
    recent = await store.read_events(SessionId(session_id), types=(MODEL_CALLED,), reverse=True, limit=_TURN_CALLS)
    mine = [e for e in reversed(recent) if e.data["turn"] == turn]
    if not mine:
        return None
    totals = usage_totals(mine)
    cost = sum_costs(call_cost(agent.prices, call_usage(e)) for e in mine)
    return _totals_text(totals, cost)


_TURN_CALLS = 64  # more model calls than any turn makes (the default round limit is 10)
