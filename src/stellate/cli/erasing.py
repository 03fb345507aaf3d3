"""``stellate sessions delete`` and ``stellate db prune``: erasing sessions for real, after saying what goes.

Both name the sessions an erase takes (and the dependents it keeps) before doing it. ``delete`` asks for a
confirmation on a terminal; ``--yes`` skips it, and without a terminal it is required.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from stellate.cli.invocation import Invocation
from stellate.cli.lookup import resolve_session
from stellate.errors import UsageError

if TYPE_CHECKING:
    from stellate.server.pruning import PrunePolicy
    from stellate.store.erasure import Dependents, ErasePlan

__all__ = ["add_delete_parser", "add_prune_parser", "add_serve_prune_options", "parse_age", "prune_policy"]

_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """An age like ``90s``, ``15m``, ``12h``, ``30d`` or ``2w``, in seconds (an argparse ``type``).

    Raises:
        argparse.ArgumentTypeError: not such an age.
    """
    found = _AGE.match(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(f"must be a number and a unit (s, m, h, d, w), like 30d, not {text!r}")
    return float(found.group(1)) * _UNIT_SECONDS[found.group(2)]


def add_delete_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``sessions delete``."""
    parser = actions.add_parser(
        "delete",
        parents=[common],
        help="erase a session (or its subtree) and everything stored of it",
        description="Erases events, slots, fold segments and event history; a tombstone without content stays.",
    )
    parser.add_argument("id", help="session id, id prefix or label")
    parser.add_argument("--subtree", action="store_true", help="erase its branches (topology descendants) too")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--cascade", action="store_true", help="also erase the sessions forked from it")
    choice.add_argument("--keep", action="store_true", help="give forks of it their own copy of what they inherit")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for a confirmation")
    parser.add_argument("--wait", type=float, default=None, metavar="SECONDS", help="wait this long for a turn")
    parser.set_defaults(handler=delete)


def add_prune_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``db prune``."""
    parser = actions.add_parser(
        "prune",
        parents=[common],
        help="erase archived sessions older than an age",
        description="Erases archived sessions whose last activity is older than AGE; their live forks keep a copy.",
    )
    parser.add_argument("--older-than", required=True, type=parse_age, metavar="AGE", help="e.g. 30d, 12h, 2w")
    parser.add_argument("--dry-run", action="store_true", help="list what would be erased and erase nothing")
    parser.set_defaults(handler=prune)


def _describe(plan: ErasePlan) -> list[str]:
    lines = [f"  erase {sid}" for sid in plan.erased]
    lines += [f"  keep  {sid} (gets its own copy of what it inherits)" for sid in plan.kept]
    return lines


async def delete(inv: Invocation) -> int:
    """Erase a session (``--subtree``: and its branches), after a confirmation unless ``--yes``."""
    args, out = inv.args, inv.consoles.out
    dependents: Dependents | None = "cascade" if args.cascade else "keep" if args.keep else None
    async with inv.open() as (store, agent):
        session_id = await resolve_session(store, args.id)
        plan = await agent.plan_erase(session_id, subtree=args.subtree, dependents=dependents)
        if not args.yes:
            _confirm(inv, plan)
        done = await agent.erase_session(
            session_id, subtree=args.subtree, dependents=dependents, busy_timeout=args.wait, by="cli"
        )
    out.print(f"erased {len(done.erased)} session(s), kept {len(done.kept)} dependent(s)")
    for line in _describe(done):
        out.print(line, soft_wrap=True)
    return 0


def _confirm(inv: Invocation, plan: ErasePlan) -> None:
    if not sys.stdin.isatty():
        raise UsageError("erasing needs a confirmation: run it on a terminal, or pass --yes")
    err = inv.consoles.err
    err.print(f"This erases {len(plan.erased)} session(s) for good:")
    for line in _describe(plan):
        err.print(line, soft_wrap=True)
    answer = input("Erase them? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise UsageError("nothing was erased (not confirmed)")


async def prune(inv: Invocation) -> int:
    """Erase archived sessions older than ``--older-than`` (``--dry-run``: list them only)."""
    args, out = inv.args, inv.consoles.out
    async with inv.open() as (_, agent):
        plan = await agent.prune_sessions(args.older_than, dry_run=args.dry_run, by="prune")
    verb = "would erase" if args.dry_run else "erased"
    out.print(f"{verb} {len(plan.erased)} archived session(s), kept {len(plan.kept)} dependent(s)")
    for line in _describe(plan):
        out.print(line, soft_wrap=True)
    return 0


def add_serve_prune_options(parser: argparse.ArgumentParser) -> None:
    """``stellate serve --prune-archived-after AGE [--prune-every AGE]``."""
    parser.add_argument(
        "--prune-archived-after",
        dest="prune_after",
        type=parse_age,
        metavar="AGE",
        help="erase archived sessions idle longer than AGE (e.g. 30d), at startup and every --prune-every",
    )
    parser.add_argument(
        "--prune-every", dest="prune_every", type=parse_age, default=3600.0, metavar="AGE", help="default 1h"
    )


def prune_policy(args: argparse.Namespace) -> PrunePolicy | None:
    """The server's pruning from the flags, or None when ``--prune-archived-after`` is not given."""
    from stellate.server.pruning import PrunePolicy

    after = getattr(args, "prune_after", None)
    return None if after is None else PrunePolicy(older_than=after, every=max(args.prune_every, 1.0))
