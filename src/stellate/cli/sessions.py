"""``stellate sessions``: list and look at the forest, copy sessions in and out, fork, rename and archive.

``sessions usage`` (what each model call cost) lives in `stellate.cli.usage`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from stellate.cli.erasing import add_delete_parser
from stellate.cli.invocation import Invocation
from stellate.cli.lookup import SessionFilter, filter_sessions, find_session, resolve_session
from stellate.cli.parsing import positive_int
from stellate.cli.replay import add_parsers as add_replay_parsers
from stellate.cli.search import add_search_parser
from stellate.cli.usage import add_usage_parser
from stellate.store import SessionId, SessionRecord

if TYPE_CHECKING:
    from rich.table import Table

    from stellate.engine.events import AgentEvent
    from stellate.store import BaseStore

__all__ = ["add_parser"]

# The engine (and the agent) are imported by the actions that run one, the store's machinery (asyncio, leases)
# by the actions that open it, rich's tables by the actions that draw one: ``sessions list`` on a SQLite file
# reads it with a plain read-only query and, piped, prints plain columns, starting without any of them (issue 22).


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``sessions`` and its actions."""
    sessions = commands.add_parser(
        "sessions", help="list, show, export, import, fork, rename, archive and delete sessions"
    )
    actions = sessions.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("tree", parents=[common], help="the forest of sessions").set_defaults(handler=tree)
    _add_list_parser(actions, common)
    show_parser = actions.add_parser("show", parents=[common], help="one session: digest and event log")
    show_parser.add_argument("id", help="session id, id prefix or label")
    show_parser.set_defaults(handler=show)
    export_parser = actions.add_parser("export", parents=[common], help="write a session's log as JSONL")
    export_parser.add_argument("id", help="session id, id prefix or label")
    export_parser.add_argument("path", help="file to write")
    export_parser.set_defaults(handler=export)
    import_parser = actions.add_parser("import", parents=[common], help="create a session from a JSONL export")
    import_parser.add_argument("path", help="file to read")
    import_parser.add_argument("--id", dest="new_id", help="id for the new session (default: the exported one)")
    import_parser.set_defaults(handler=import_)
    _add_fork_parser(actions, common)
    archive_parser = actions.add_parser("archive", parents=[common], help="make a session read-only")
    archive_parser.add_argument("id", help="session id, id prefix or label")
    archive_parser.set_defaults(handler=archive)
    rename_parser = actions.add_parser("rename", parents=[common], help="give a session a new label")
    rename_parser.add_argument("id", help="session id, id prefix or label")
    rename_parser.add_argument("label", nargs="+", help="the new label (several words need no quotes)")
    rename_parser.set_defaults(handler=rename)
    add_replay_parsers(actions, common)
    add_delete_parser(actions, common)
    add_search_parser(actions, common)
    add_usage_parser(actions, common)


def _add_list_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    list_parser = actions.add_parser(
        "list",
        parents=[common],
        help="sessions as a table, most recently active first, with filters and search",
        description="Every filter given must hold; --search words may appear in any order.",
    )
    list_parser.add_argument("--search", metavar="WORDS", help="words in the label, memory, insight or system prompt")
    list_parser.add_argument("--status", choices=["active", "archived"], help="only sessions with this status")
    list_parser.add_argument("--under", metavar="ID", help="only this session and its branches (id, prefix or label)")
    list_parser.add_argument("--roots", action="store_true", help="only sessions without a parent")
    list_parser.add_argument("--limit", type=positive_int, metavar="N", help="show at most N sessions")
    list_parser.set_defaults(handler=list_)


def _add_fork_parser(
    actions: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    fork_parser = actions.add_parser(
        "fork",
        parents=[common],
        help="fork a child that inherits the session's history by reference",
        description="Without --boundary or --at the child inherits up to the last completed turn.",
    )
    fork_parser.add_argument("id", help="source session: id, id prefix or label")
    fork_parser.add_argument("--label", required=True, help="the child's label")
    point = fork_parser.add_mutually_exclusive_group()
    point.add_argument(
        "--boundary", type=int, metavar="SEQ", help="inherit events 0..SEQ exactly (refused inside a turn)"
    )
    point.add_argument("--at", type=int, metavar="SEQ", help="inherit up to the end of the turn holding SEQ")
    fork_parser.set_defaults(handler=fork)


async def tree(inv: Invocation) -> int:
    """Print the forest."""
    from stellate.cli.render import forest_tree

    database, out = inv.database(), inv.consoles.out
    if not database.exists():
        out.print(f"no sessions yet: {database.describe()} does not exist")
        return 0
    async with inv.open() as (_, agent):
        roots = await agent.get_topology()
        digests = {d.id: d for d in await agent.list_session_digests()}
    if not roots:
        out.print(f"no sessions in {database.describe()}")
        return 0
    out.print(forest_tree(database.describe(), roots, digests, current=database.last_session()))
    return 0


def list_(inv: Invocation) -> int:
    """Print the sessions the filters select, most recently active first."""
    database, args = inv.database(), inv.args
    if not database.exists():
        inv.consoles.say(f"no sessions yet: {database.describe()} does not exist")
        return 0
    records = None
    if database.path is not None and database.schema is None:
        from stellate.store.sqlite_files import read_listing

        records = read_listing(database.path, timeout=database.lock_timeout)
    if records is None:  # not a SQLite file it can read as is: the store opens it (and says what to do)
        import asyncio

        records = asyncio.run(_read_listing(inv))
    under = find_session(records, args.under) if args.under else None
    wanted = SessionFilter(search=args.search, status=args.status, under=under, roots=args.roots)
    chosen = filter_sessions(records, wanted)
    if not chosen:
        inv.consoles.say("no session matches")
        return 0
    shown = chosen[: args.limit] if args.limit is not None else chosen
    more = f"{len(chosen) - len(shown)} more (raise --limit)" if len(shown) < len(chosen) else None
    if inv.consoles.plain_out:
        from stellate.cli.columns import session_columns

        inv.consoles.write_out(session_columns(shown, current=database.last_session(), width=inv.consoles.width))
        if more:
            inv.consoles.write_out(more + "\n")
        return 0
    from rich.text import Text

    from stellate.cli.render import session_table

    out = inv.consoles.out
    out.print(session_table(shown, current=database.last_session()))
    if more:
        out.print(Text(more, "dim"))
    return 0


async def _read_listing(inv: Invocation) -> list[SessionRecord]:
    async with inv.open_store() as store:
        return await store.list_sessions()


async def rename(inv: Invocation) -> int:
    """Give a session a new label."""
    label = " ".join(inv.args.label).strip()
    async with inv.open() as (store, agent):
        session_id = await resolve_session(store, inv.args.id)
        await agent.rename_session(session_id, label)
    inv.consoles.out.print(f"renamed {session_id} to {label!r}")
    return 0


async def show(inv: Invocation) -> int:
    """Print one session's digest and its whole log (inherited prefix included), one event per line."""
    from rich.text import Text

    from stellate.cli.render import event_line

    out = inv.consoles.out
    async with inv.open() as (store, agent):
        record = await store.get_session(await resolve_session(store, inv.args.id))
        digest = await agent.get_session_digest(record.id)
        events = await store.read_events(record.id)
    out.print(_record_grid(record, digest.memory, digest.insight))
    for event in events:
        if record.inherited and event.seq == record.inherited:
            out.print(Text(f"  ── own events (0..{record.inherited - 1} inherited from {record.source_id}) ──", "dim"))
        out.print(event_line(event), soft_wrap=True)
    return 0


def _record_grid(record: SessionRecord, memory: str | None, insight: str | None) -> Table:
    from rich.table import Table
    from rich.text import Text

    from stellate.cli.render import clip

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    source = f"{record.source_id} (fork at seq {record.fork_seq})" if record.source_id else "-"
    rows = {
        "id": record.id,
        "label": record.label or "(no label)",
        "status": record.status,
        "parent": record.parent_id or "- (root)",
        "source": source,
        "turns": str(record.turn_count),
        "events": str(record.next_seq),
        "system prompt": clip(record.slots.system_prompt, 200) or "-",
        "memory": clip(memory, 200) or "-",
        "insight": clip(insight, 200) or "-",
    }
    for name, value in rows.items():
        grid.add_row(name, Text(value))
    return grid


async def export(inv: Invocation) -> int:
    """Write a session's log to a JSONL file."""
    from stellate.cli.console import progress_bar
    from stellate.store import export_session

    path = Path(inv.args.path)
    async with inv.open() as (store, _):
        session_id = await resolve_session(store, inv.args.id)
        with progress_bar(inv.consoles.err, f"exporting {session_id}") as progress:
            count = await export_session(store, SessionId(session_id), path, progress=progress)
    inv.consoles.out.print(f"exported {count} events of {session_id} to {path}")
    return 0


async def import_(inv: Invocation) -> int:
    """Create a session from a JSONL export; the file is checked in full before anything is written."""
    from stellate.cli.console import progress_bar
    from stellate.store import import_session

    path, new_id = Path(inv.args.path), inv.args.new_id
    if not inv.database().exists():
        await _dry_run(path)  # so a bad file does not leave a new, empty database behind
    async with inv.open(create=True) as (store, _):
        with progress_bar(inv.consoles.err, f"importing {path.name}") as progress:
            record = await import_session(
                store, path, session_id=SessionId(new_id) if new_id else None, progress=progress
            )
    inv.consoles.out.print(f"imported {record.id} ({record.label or 'no label'}, {record.next_seq} events) from {path}")
    return 0


async def _dry_run(path: Path) -> None:
    from stellate.store import import_session
    from stellate.store.memory import MemoryStore

    async with await MemoryStore.open() as scratch:
        await import_session(scratch, path)


async def fork(inv: Invocation) -> int:
    """Fork a child inheriting the source's history by reference, at an exact boundary or an anchor."""
    from stellate.engine import ForkOptions

    args = inv.args
    async with inv.open() as (store, agent):
        source_id = await resolve_session(store, args.id)
        if args.boundary is not None:
            await _check_boundary(store, source_id, args.boundary)
        at_seq = args.boundary if args.boundary is not None else args.at
        options = ForkOptions(label=args.label, context="inherit", at_seq=at_seq)
        child = await store.get_session(SessionId((await agent.fork_session(source_id, options)).id))
    inherited = (
        f"at seq {child.fork_seq} ({child.inherited} events inherited)"
        if child.fork_seq is not None
        else "with no inherited events (the source has no completed turn)"
    )
    inv.consoles.out.print(f"forked {child.id} ({args.label}) from {source_id} {inherited}")
    return 0


async def _check_boundary(store: BaseStore, session_id: str, seq: int) -> None:
    """Refuse an explicit boundary that is not a seq of the source or lies inside a turn (seed 002).

    A boundary that passes is outside any turn, where an anchor resolves to the seq itself, so the fork
    made with ``at_seq=seq`` afterwards has exactly this boundary (the log before it never changes).
    """
    from stellate.log.fork import check_explicit_boundary

    record = await store.get_session(SessionId(session_id))
    markers = []
    if 0 <= seq < record.next_seq:
        markers = await store.read_events(
            record.id, stop=seq + 1, types=("turn/start", "turn/end"), reverse=True, limit=1
        )
    check_explicit_boundary(seq, next_seq=record.next_seq, last_marker=markers[0] if markers else None)


async def archive(inv: Invocation) -> int:
    """Archive a session (its memory is consolidated first when a provider is configured)."""
    from stellate.cli.render import clip
    from stellate.engine.events import ErrorRaised

    err = inv.consoles.err

    def warn(event: AgentEvent) -> None:
        if isinstance(event, ErrorRaised):
            err.print(f"warning: {event.source} failed ({event.code}): {clip(event.message)}", soft_wrap=True)

    async with inv.open() as (store, agent):
        session_id = await resolve_session(store, inv.args.id)
        agent.add_hook(warn, types=["error"])
        await agent.archive_session(session_id)
        if not agent.consolidate_on_archive:
            err.print("note: memory was not consolidated first (no model provider is configured)")
    inv.consoles.out.print(f"archived {session_id}: it is read-only from now on")
    return 0
