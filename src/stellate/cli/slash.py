"""The chat's slash commands: one small handler each, found by name in `COMMANDS`."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.table import Table
from rich.text import Text

from stellate.cli.console import progress_bar
from stellate.cli.contexts import last_call_context
from stellate.cli.parsing import CommandParser
from stellate.cli.render import context_table, forest_tree
from stellate.engine import ForkOptions
from stellate.errors import UsageError
from stellate.store import SessionId, export_session

if TYPE_CHECKING:
    from stellate.cli.chat import ChatSession

__all__ = ["COMMANDS", "QUIT", "run_command"]

QUIT = object()
"""Returned by a command that ends the chat."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A slash command: its handler (given the chat and the rest of the line), syntax and help."""

    run: Callable[[ChatSession, str], object]
    syntax: str
    help: str


def run_command(chat: ChatSession, line: str) -> object:
    """Run a ``/command rest-of-line``; returns `QUIT` to end the chat.

    Raises:
        UsageError: unknown command or bad arguments.
    """
    name, _, rest = line[1:].partition(" ")
    command = COMMANDS.get(name.lower())
    if command is None:
        raise UsageError(f"unknown command /{name}; /help lists the commands")
    return command.run(chat, rest.strip())


def _fork_parser() -> CommandParser:
    parser = CommandParser(prog="/fork", add_help=False)
    parser.add_argument("label")
    parser.add_argument("--profile")
    parser.add_argument("--context", choices=["none", "inherit", "compress"])
    parser.add_argument("--at", type=int, metavar="SEQ")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    return parser


def fork(chat: ChatSession, rest: str) -> None:
    """Fork a child of the current session and switch to it."""
    args = _fork_parser().parse_args(shlex.split(rest))
    variables = dict(_variable(item) for item in args.var)
    context: Literal["none", "inherit", "compress"] | None = args.context or (
        "inherit" if args.at is not None else None
    )
    options = ForkOptions(
        label=args.label, profile=args.profile, context=context, at_seq=args.at, profile_vars=variables or None
    )
    child = chat.call(chat.agent.fork_session, chat.current, options)
    chat.switch(child.id)


def _variable(item: str) -> tuple[str, str]:
    name, equals, value = item.partition("=")
    if not equals or not name:
        raise UsageError(f"/fork: --var takes NAME=VALUE, not {item!r}")
    return name, value


def switch(chat: ChatSession, rest: str) -> None:
    """Continue in another session."""
    if not rest:
        raise UsageError("/switch needs a session id (see /tree)")
    chat.switch(rest)


def tree(chat: ChatSession, rest: str) -> None:
    """Show the forest, marking the current session."""
    roots = chat.call(chat.agent.get_topology)
    digests = {d.id: d for d in chat.call(chat.agent.list_session_digests)}
    chat.consoles.out.print(forest_tree(chat.database.describe(), roots, digests, current=chat.current))


def memory(chat: ChatSession, rest: str) -> None:
    """Show the current session's memory, or replace it with the text given."""
    if rest:
        chat.call(chat.agent.put_memory, chat.current, rest)
    shown = chat.call(chat.agent.get_session_digest, chat.current).memory
    chat.consoles.out.print(Text(f"memory: {shown or '(none yet)'}", style="italic"), soft_wrap=True)


def insight(chat: ChatSession, rest: str) -> None:
    """Show the pending insight, or set one (the next successful model call consumes it)."""
    if rest:
        chat.call(chat.agent.put_insight, chat.current, rest)
    shown = chat.call(chat.agent.get_session_digest, chat.current).insight
    chat.consoles.out.print(Text(f"insight pending: {shown or '(none)'}", style="magenta"), soft_wrap=True)


def consolidate(chat: ChatSession, rest: str) -> None:
    """Consolidate the current session's history into its memory now."""
    shown = chat.call(chat.agent.consolidate_session, chat.current)
    chat.consoles.out.print(Text(f"memory: {shown}", style="italic"), soft_wrap=True)


def context(chat: ChatSession, rest: str) -> None:
    """Show the exact messages of the current session's last model call, rebuilt from the log."""
    found = chat.call(last_call_context, chat.store, chat.current)
    if found is None:
        chat.consoles.out.print("no model call in this session yet")
        return
    seq, messages = found
    chat.consoles.out.print(f"context of the model call that wrote seq {seq} ({len(messages)} messages):")
    chat.consoles.out.print(context_table(messages))


def export(chat: ChatSession, rest: str) -> None:
    """Write the current session's log to a JSONL file."""
    if not rest:
        raise UsageError("/export needs a file path")
    path = Path(rest).expanduser()
    with progress_bar(chat.consoles.err, "exporting") as progress:
        count = chat.call(lambda: export_session(chat.store, SessionId(chat.current), path, progress=progress))
    chat.consoles.out.print(f"exported {count} events to {path}")


def show_help(chat: ChatSession, rest: str) -> None:
    """List the commands."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column()
    for command in dict.fromkeys(COMMANDS.values()):
        table.add_row(Text(command.syntax, style="bold"), command.help)
    chat.consoles.out.print(table)


def quit_chat(chat: ChatSession, rest: str) -> object:
    """End the chat."""
    return QUIT


_QUIT = SlashCommand(quit_chat, "/quit", "leave (the session is kept; `stellate chat` resumes it)")

COMMANDS: dict[str, SlashCommand] = {
    "fork": SlashCommand(
        fork,
        "/fork LABEL [--profile P] [--var K=V] [--context none|inherit|compress] [--at SEQ]",
        "branch off the current session and switch to the branch",
    ),
    "switch": SlashCommand(switch, "/switch ID", "continue in another session"),
    "tree": SlashCommand(tree, "/tree", "the forest of sessions"),
    "memory": SlashCommand(memory, "/memory [TEXT]", "show or replace this session's memory"),
    "insight": SlashCommand(insight, "/insight [TEXT]", "show or set the insight the next model call receives"),
    "consolidate": SlashCommand(consolidate, "/consolidate", "summarize this session into its memory now"),
    "context": SlashCommand(context, "/context", "the exact context of the last model call"),
    "export": SlashCommand(export, "/export PATH", "write this session's log as JSONL"),
    "help": SlashCommand(show_help, "/help", "this list"),
    "quit": _QUIT,
    "exit": _QUIT,
}
