"""``stellate sessions replay`` and ``compare``: run a branch again with another model or prompt, and compare.

A replay cuts a new branch just before ``--from-turn`` (by reference) and runs the source's user messages from
there on, one turn each, with this run's provider and model (``--provider``/``--model``), a system prompt or a
profile; the source is only read. ``compare`` prints two sessions' turns after their split side by side.
"""

from __future__ import annotations

import argparse

from stellate.cli.columns import clip
from stellate.cli.invocation import Invocation
from stellate.cli.lookup import resolve_session
from stellate.cli.parsing import positive_int

__all__ = ["add_parsers"]


def add_parsers(actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``sessions replay`` and ``sessions compare``."""
    replay_parser = actions.add_parser(
        "replay",
        parents=[common],
        help="run a session's user messages again from a turn, in a new branch with another model or prompt",
        description="The new branch inherits the turns before --from-turn by reference; the session is only read.",
    )
    replay_parser.add_argument("id", help="session to replay: id, id prefix or label")
    replay_parser.add_argument("--from-turn", type=positive_int, required=True, metavar="N", help="first turn to run")
    replay_parser.add_argument("--provider", help="model provider for the branch (default: as configured)")
    replay_parser.add_argument("--model", help="model name for the branch (default: as configured)")
    replay_parser.add_argument("--base-url", dest="base_url", help="API root of an OpenAI-compatible server")
    replay_parser.add_argument("--system-prompt", dest="system_prompt", metavar="TEXT", help="the branch's prompt")
    replay_parser.add_argument("--profile", metavar="P", help="a fork profile for the branch")
    replay_parser.add_argument("--label", help="the branch's label")
    replay_parser.set_defaults(handler=replay)
    compare_parser = actions.add_parser(
        "compare", parents=[common], help="two sessions side by side from their common ancestor"
    )
    compare_parser.add_argument("a", help="one session: id, id prefix or label")
    compare_parser.add_argument("b", help="the other session")
    compare_parser.set_defaults(handler=compare)


async def replay(inv: Invocation) -> int:
    """Replay a session from a turn into a new branch, printing each turn as it streams."""
    from rich.text import Text

    from stellate.agent.replay import ReplaySettings, ReplayTurn, replay_label, stream_replay
    from stellate.cli.replies import TurnPrinter

    args, out = inv.args, inv.consoles.out
    async with inv.open() as (store, agent):
        source_id = await resolve_session(store, args.id)
        record = await store.get_session(source_id)
        named = ReplaySettings(llm=args.model, system_prompt=args.system_prompt, profile=args.profile)
        label = args.label or replay_label(record.label, args.from_turn, named)
        settings = ReplaySettings(system_prompt=args.system_prompt, profile=args.profile, label=label)
        printer: TurnPrinter | None = None
        branch_id = ""
        async for event in stream_replay(agent, source_id, args.from_turn, settings):
            if isinstance(event, ReplayTurn):
                if printer is not None:
                    printer.finish()
                branch_id = event.session_id
                out.print(Text(f"turn {event.source_turn} ({event.index} of {event.total}) › {clip(event.content)}"))
                printer = TurnPrinter(out)
            elif printer is not None:
                printer(event)
        if printer is not None:
            printer.finish()
    out.print(Text(f"replayed into {branch_id} ({label}); compare: stellate sessions compare {source_id} {branch_id}"))
    return 0


async def compare(inv: Invocation) -> int:
    """Print two sessions' turns after their split, side by side, with their totals."""
    from rich.table import Table
    from rich.text import Text

    async with inv.open() as (store, agent):
        a, b = await resolve_session(store, inv.args.a), await resolve_session(store, inv.args.b)
        found = await agent.compare_sessions(a, b)
    out = inv.consoles.out
    ancestor = found.ancestor_id or "none (unrelated sessions)"
    out.print(Text(f"common ancestor: {ancestor} · {len(found.shared_turns)} shared turn(s)"))
    table = Table("turn", found.a.label or found.a.id, found.b.label or found.b.id, "differs")
    for row in found.rows:
        marks = [word for word, flag in (("tools", row.tools_differ), ("reply", row.replies_differ)) if flag]
        table.add_row(
            str(row.turn),
            Text(clip(row.a.reply) if row.a else "—"),
            Text(clip(row.b.reply) if row.b else "—"),
            ", ".join(marks),
        )
    out.print(table)
    for side in (found.a, found.b):
        totals = side.totals
        tokens = (
            "unknown"
            if totals.input_tokens is None or totals.output_tokens is None
            else (f"{totals.input_tokens} in / {totals.output_tokens} out")
        )
        out.print(Text(f"{side.label or side.id}: {totals.calls} call(s), tokens {tokens}, {totals.latency_ms} ms"))
    return 0
