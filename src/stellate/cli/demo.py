"""``stellate demo``: the study-abroad planner, offline, on the default database.

Each run adds a new root (a new tree) to the database and prints only that tree, so running it again is
safe and leaves earlier runs in place for ``stellate sessions tree``, ``show`` and ``chat --session``.
"""

from __future__ import annotations

import argparse
import importlib.util

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from stellate.agent import Agent, Reflector
from stellate.cli.contexts import last_call_context
from stellate.cli.database import open_database
from stellate.cli.invocation import Invocation
from stellate.cli.render import clip, digest_table, forest_tree
from stellate.cli.replies import TurnPrinter
from stellate.cli.scenario import Trip, plan_trip, scripted_planner, scripted_reflector, study_abroad_profiles
from stellate.engine.events import TurnEvent
from stellate.store import BaseStore

__all__ = ["RichNarrator", "add_parser"]

_SERVER_MODULES = ("fastapi", "uvicorn")  # what `stellate serve` imports from the server extra


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``demo``."""
    commands.add_parser(
        "demo",
        parents=[common],
        help="grow a small forest offline (scripted model, no API key)",
        description="Runs the study-abroad planner with a scripted model and adds it to the database as a new tree.",
    ).set_defaults(handler=demo)


class RichNarrator:
    """Narrates the scenario on a rich console."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.printer = TurnPrinter(console)

    def section(self, title: str) -> None:
        """A rule with the title."""
        self.console.print(Rule(Text(title, style="bold"), align="left"))

    def user(self, text: str) -> None:
        """The user's message."""
        self.console.print(Text.assemble(("you › ", "bold cyan"), text), soft_wrap=not self.console.is_terminal)

    def event(self, event: TurnEvent) -> None:
        """Stream the turn."""
        self.printer(event)

    def note(self, text: str) -> None:
        """An indented remark."""
        self.console.print(Text(f"  • {text}", style="italic"), soft_wrap=not self.console.is_terminal)


async def demo(inv: Invocation) -> int:
    """Run the scenario and show the tree it grew and the digests."""
    out = inv.consoles.out
    database = inv.database()
    out.print(Text("stellate demo: a study-abroad planner on a scripted model (offline, no API key)", "bold"))
    out.print(f"database: {database.describe()}  (each run adds a new tree)", soft_wrap=True)
    planner = scripted_planner()
    reflector = Reflector(scripted_reflector())
    async with open_database(database, create=True) as store:
        agent = Agent(
            store,
            llm=planner,
            profiles=study_abroad_profiles(poet=False),
            builtin_tools=["create_session"],
            reflector=reflector,
        )
        try:
            trip = await plan_trip(agent, RichNarrator(out))
            await _show_insight_use(store, trip, out)
            await _show_forest(agent, trip, out)
        finally:
            await agent.close()
    out.print(f"next: stellate sessions tree · stellate sessions show {trip.root_id} · stellate chat --session ID")
    hint = f"see it on the star map: {_serve_command(inv)}, then the browser shows this forest"
    out.print(hint, soft_wrap=True, markup=False)  # markup=False: "stellate[server]" is not a style
    return 0


def _serve_command(inv: Invocation) -> str:
    """The ``stellate serve --open`` line that serves the database the demo just wrote to.

    Without the ``server`` extra (README step 1 installs only ``cli``) it starts with the install it needs.
    """
    named = inv.args.db if getattr(inv.args, "db", None) else None
    command = f"stellate serve --db {named} --open" if named else "stellate serve --open"
    if not all(importlib.util.find_spec(module) for module in _SERVER_MODULES):
        return f'pip install "stellate[server]" and run {command}'
    return command


async def _show_insight_use(store: BaseStore, trip: Trip, out: Console) -> None:
    if trip.insight_target is None:
        return
    call = await last_call_context(store, trip.branches[trip.insight_target])
    seen = next((m.content for m in call[1] if "<insight>" in m.content), None) if call else None
    out.print(Text(f"  • the call at seq {call[0] if call else '?'} had in its context:", style="italic"))
    out.print(Text(f"      {clip(seen, 160)}", style="magenta"), soft_wrap=True)
    state = "consumed (pending insight: none)" if trip.insight_consumed else "still pending"
    out.print(Text(f"  • insight {state}", style="bold magenta"))


async def _show_forest(agent: Agent, trip: Trip, out: Console) -> None:
    node = await agent.get_node(trip.root_id)
    ids = {node.id, *(child.id for child in node.children)}
    digests = [d for d in await agent.list_session_digests() if d.id in ids]
    out.print(Rule(Text("The tree this run grew", style="bold"), align="left"))
    out.print(forest_tree("forest", [node], {d.id: d for d in digests}))
    out.print(digest_table(digests))
