"""The chat's slash commands: one small handler each, found by name in `COMMANDS`.

Every command has a real parser, so ``/fork --help`` shows its usage and an unknown flag is an error, never
content. Commands that store text (``/memory``, ``/insight``, ``/rename``, ``/export``) take the rest of the
line as it was typed (apostrophes, spacing and line breaks kept); text that starts with ``-`` follows ``--``.
Elsewhere words are split on spaces, double quotes group them, and a label of several words needs no quotes.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn

from rich.table import Table
from rich.text import Text

from stellate.agent.images import load_image
from stellate.cli import branch_commands
from stellate.cli.console import progress_bar
from stellate.cli.contexts import last_call_context
from stellate.cli.lookup import SessionFilter, filter_sessions
from stellate.cli.parsing import CommandParser
from stellate.cli.render import context_table, forest_tree, session_table
from stellate.engine import ForkOptions
from stellate.errors import UsageError
from stellate.store import SessionId, export_session

if TYPE_CHECKING:
    from stellate.cli.chat import ChatSession

__all__ = ["COMMANDS", "QUIT", "SlashCommand", "run_command", "split_words"]

QUIT = object()
"""Returned by a command that ends the chat."""


class HelpShown(Exception):
    """Raised by ``--help`` with the text to show, instead of argparse printing it and exiting."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class SlashParser(CommandParser):
    """A slash command's parser: ``--help`` hands its text back, mistakes are `UsageError`."""

    def print_help(self, file: object = None) -> NoReturn:
        """Raise `HelpShown` with the help (argparse's ``-h`` action calls this)."""
        raise HelpShown(self.format_help())


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A slash command: its handler, its parser, and the line ``/help`` shows."""

    run: Callable[[ChatSession, argparse.Namespace], object]
    parser: Callable[[], SlashParser]
    syntax: str
    help: str
    text: bool = False
    """The command takes the rest of the line as one ``text`` argument, as typed."""


def run_command(chat: ChatSession, line: str) -> object:
    """Run a ``/command rest-of-line``; returns `QUIT` to end the chat.

    Raises:
        UsageError: unknown command or bad arguments.
    """
    name, rest = [*line[1:].split(maxsplit=1), "", ""][:2]  # the text may span lines: split on any whitespace
    command = COMMANDS.get(name.lower())
    if command is None:
        raise UsageError(f"unknown command /{name}; /help lists the commands")
    parser = command.parser()
    try:
        args = _parse_text(parser, rest) if command.text else parser.parse_intermixed_args(split_words(rest))
    except HelpShown as shown:
        chat.consoles.out.print(Text(shown.text.rstrip()), soft_wrap=True)
        return None
    return command.run(chat, args)


def split_words(rest: str) -> list[str]:
    """Split on whitespace; double quotes group words (an apostrophe is just a letter).

    Raises:
        UsageError: a double quote is not closed.
    """
    lexer = shlex.shlex(rest, posix=True)
    lexer.whitespace_split = True
    lexer.quotes = '"'
    lexer.escapedquotes = '"'
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:
        raise UsageError(f"a double quote is not closed in {rest.strip()!r}") from exc


def _parse_text(parser: SlashParser, rest: str) -> argparse.Namespace:
    """Options first (``--help``, ``--clear``); the text is the rest of the line, or what follows ``--``."""
    text = rest.strip()
    if not text.startswith("-"):
        options, body = "", text
    elif text == "--" or text.startswith(("-- ", "--\n")):
        options, body = "", text[2:]
    else:
        options, _, body = text.partition(" -- ")
    try:
        args = parser.parse_args(split_words(options))
    except UsageError as exc:
        problem = exc.message.removesuffix(f" (see {parser.prog} --help)")
        hint = f"text that starts with '-' goes after '--' ({parser.prog} -- TEXT); see {parser.prog} --help"
        raise UsageError(f"{problem}; {hint}") from exc
    args.text = body.strip()
    return args


def _parser(prog: str, description: str) -> SlashParser:
    return SlashParser(prog=prog, description=description)


# -- the commands -------------------------------------------------------------------------------------------


def _fork_parser() -> SlashParser:
    parser = _parser("/fork", "Fork the current session and switch to the branch.")
    parser.add_argument("label", nargs="+", help="the branch's label (several words need no quotes)")
    parser.add_argument("--profile", metavar="P", help="a fork profile (Tab completes the names)")
    parser.add_argument("--context", choices=["none", "inherit", "compress"], help="what the branch inherits")
    parser.add_argument("--at", type=int, metavar="SEQ", help="inherit up to the end of the turn holding SEQ")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="a profile variable")
    return parser


def fork(chat: ChatSession, args: argparse.Namespace) -> None:
    """Fork a child of the current session and switch to it."""
    variables = dict(_variable(item) for item in args.var)
    context: Literal["none", "inherit", "compress"] | None = args.context or (
        "inherit" if args.at is not None else None
    )
    options = ForkOptions(
        label=" ".join(args.label),
        profile=args.profile,
        context=context,
        at_seq=args.at,
        profile_vars=variables or None,
    )
    chat.switching_to_fork = True  # the switch line below names the branch; "(/switch ...)" would be stale
    try:
        child = chat.call(chat.agent.fork_session, chat.current, options)
    finally:
        chat.switching_to_fork = False
    chat.switch(child.id)


def _variable(item: str) -> tuple[str, str]:
    name, equals, value = item.partition("=")
    if not equals or not name:
        raise UsageError(f"/fork: --var takes NAME=VALUE, not {item!r}")
    return name, value


def _switch_parser() -> SlashParser:
    parser = _parser("/switch", "Continue in another session.")
    parser.add_argument("session", nargs="+", help="its id, the first characters of its id, or its label")
    return parser


def switch(chat: ChatSession, args: argparse.Namespace) -> None:
    """Continue in another session."""
    chat.switch(" ".join(args.session))


def _sessions_parser() -> SlashParser:
    parser = _parser("/sessions", "List sessions, most recently active first.")
    parser.add_argument("words", nargs="*", help="words to find in the label, memory, insight or system prompt")
    parser.add_argument("--status", choices=["active", "archived"], help="only sessions with this status")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="show at most N (default 20)")
    return parser


def sessions(chat: ChatSession, args: argparse.Namespace) -> None:
    """List the sessions the words and filters select."""
    wanted = SessionFilter(search=" ".join(args.words) or None, status=args.status)
    chosen = filter_sessions(chat.call(chat.store.list_sessions), wanted)
    if not chosen:
        chat.consoles.out.print("no session matches")
        return
    chat.consoles.out.print(session_table(chosen[: args.limit], current=chat.current))
    if len(chosen) > args.limit:
        chat.consoles.out.print(Text(f"{len(chosen) - args.limit} more (--limit N)", "dim"))


def _rename_parser() -> SlashParser:
    return _parser("/rename", "Give the current session a new label (the rest of the line).")


def rename(chat: ChatSession, args: argparse.Namespace) -> None:
    """Rename the current session."""
    if not args.text:
        raise UsageError("/rename needs the new label (see /rename --help)")
    chat.call(chat.agent.rename_session, chat.current, args.text)
    chat.switch(chat.current)


def tree(chat: ChatSession, args: argparse.Namespace) -> None:
    """Show the forest, marking the current session."""
    roots = chat.call(chat.agent.get_topology)
    digests = {d.id: d for d in chat.call(chat.agent.list_session_digests)}
    chat.consoles.out.print(forest_tree(chat.database.describe(), roots, digests, current=chat.current))


def _memory_parser() -> SlashParser:
    return _parser("/memory", "Show the session's memory, or replace it with the rest of the line.")


def memory(chat: ChatSession, args: argparse.Namespace) -> None:
    """Show the current session's memory, or replace it with the text given."""
    if args.text:
        chat.call(chat.agent.put_memory, chat.current, args.text)
    shown = chat.call(chat.agent.get_session_digest, chat.current).memory
    chat.consoles.out.print(Text(f"memory: {shown or '(none yet)'}", style="italic"), soft_wrap=True)


def _insight_parser() -> SlashParser:
    parser = _parser("/insight", "Show the pending insight, or set it to the rest of the line.")
    parser.add_argument("--clear", action="store_true", help="drop the pending insight")
    return parser


def insight(chat: ChatSession, args: argparse.Namespace) -> None:
    """Show the pending insight, or set one (the next successful model call consumes it), or clear it."""
    if args.clear:
        chat.call(chat.agent.clear_insight, chat.current)
    elif args.text:
        chat.call(chat.agent.put_insight, chat.current, args.text)
    shown = chat.call(chat.agent.get_session_digest, chat.current).insight
    chat.consoles.out.print(Text(f"insight pending: {shown or '(none)'}", style="magenta"), soft_wrap=True)


def consolidate(chat: ChatSession, args: argparse.Namespace) -> None:
    """Consolidate the current session's history into its memory now."""
    shown = chat.call(chat.agent.consolidate_session, chat.current)
    chat.consoles.out.print(Text(f"memory: {shown}", style="italic"), soft_wrap=True)


def context(chat: ChatSession, args: argparse.Namespace) -> None:
    """Show the exact messages of the current session's last model call, rebuilt from the log."""
    found = chat.call(last_call_context, chat.store, chat.current)
    if found is None:
        chat.consoles.out.print("no model call in this session yet")
        return
    seq, messages = found
    chat.consoles.out.print(f"context of the model call that wrote seq {seq} ({len(messages)} messages):")
    chat.consoles.out.print(context_table(messages))


def _export_parser() -> SlashParser:
    return _parser("/export", "Write the current session's log as JSONL to the file named by the rest of the line.")


def export(chat: ChatSession, args: argparse.Namespace) -> None:
    """Write the current session's log to a JSONL file."""
    if not args.text:
        raise UsageError("/export needs a file path (see /export --help)")
    path = Path(args.text).expanduser()
    with progress_bar(chat.consoles.err, "exporting") as progress:
        count = chat.call(lambda: export_session(chat.store, SessionId(chat.current), path, progress=progress))
    chat.consoles.out.print(f"exported {count} events to {path}")


def _image_parser() -> SlashParser:
    parser = _parser("/image", "Attach an image (the file named by the rest of the line) to your next message.")
    parser.add_argument("--clear", action="store_true", help="drop the images attached so far")
    return parser


def image(chat: ChatSession, args: argparse.Namespace) -> None:
    """Check an image file now and attach it to the next message (several may be attached)."""
    if args.clear:
        chat.pending_images.clear()
        chat.consoles.out.print("no images attached")
        return
    if not args.text:
        raise UsageError("/image needs a file path (see /image --help)")
    path = Path(args.text).expanduser()
    found = chat.call(load_image, path, chat.agent.image_policy)
    chat.pending_images.append(found)
    size = f", {found.width}x{found.height}" if found.width else ""
    shown = f"attached {path.name} ({found.media_type}{size}, {found.size} bytes): it goes with your next message"
    chat.consoles.out.print(Text(shown, style="cyan"), soft_wrap=True)


def _help_parser() -> SlashParser:
    parser = _parser("/help", "List the commands, or show one command's options.")
    parser.add_argument("command", nargs="?", help="a command name, with or without its slash")
    return parser


def show_help(chat: ChatSession, args: argparse.Namespace) -> None:
    """List the commands, or show one command's help."""
    if args.command:
        run_command(chat, f"/{args.command.removeprefix('/')} --help")
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True)
    table.add_column()
    for command in dict.fromkeys(COMMANDS.values()):
        table.add_row(Text(command.syntax, style="bold"), command.help)
    chat.consoles.out.print(table)
    chat.consoles.out.print(
        Text("/COMMAND --help shows a command's options · Alt-Enter starts a new line · Tab completes", "dim")
    )


def quit_chat(chat: ChatSession, args: argparse.Namespace) -> object:
    """End the chat."""
    return QUIT


def _plain(prog: str, description: str) -> Callable[[], SlashParser]:
    return lambda: _parser(prog, description)


_QUIT = SlashCommand(
    quit_chat, _plain("/quit", "Leave the chat."), "/quit", "leave (the session is kept; `stellate chat` resumes it)"
)

COMMANDS: dict[str, SlashCommand] = {
    "fork": SlashCommand(
        fork,
        _fork_parser,
        "/fork LABEL [--profile P] [--var K=V] [--context none|inherit|compress] [--at SEQ]",
        "branch off the current session and switch to the branch",
    ),
    "switch": SlashCommand(switch, _switch_parser, "/switch ID|LABEL", "continue in another session"),
    "sessions": SlashCommand(
        sessions, _sessions_parser, "/sessions [WORDS] [--status S]", "list sessions, finding words in them"
    ),
    "rename": SlashCommand(rename, _rename_parser, "/rename LABEL", "give this session a new label", text=True),
    "tree": SlashCommand(tree, _plain("/tree", "Show the forest of sessions."), "/tree", "the forest of sessions"),
    "memory": SlashCommand(
        memory, _memory_parser, "/memory [TEXT]", "show or replace this session's memory", text=True
    ),
    "insight": SlashCommand(
        insight,
        _insight_parser,
        "/insight [TEXT | --clear]",
        "show, set or clear the insight the next model call receives",
        text=True,
    ),
    "consolidate": SlashCommand(
        consolidate,
        _plain("/consolidate", "Summarize this session into its memory now."),
        "/consolidate",
        "summarize this session into its memory now",
    ),
    "context": SlashCommand(
        context,
        _plain("/context", "Show the exact messages of the last model call, rebuilt from the log."),
        "/context",
        "the exact context of the last model call",
    ),
    "export": SlashCommand(export, _export_parser, "/export PATH", "write this session's log as JSONL", text=True),
    "help": SlashCommand(show_help, _help_parser, "/help [COMMAND]", "this list, or one command's options"),
    "quit": _QUIT,
    "exit": _QUIT,
    "edit": SlashCommand(
        branch_commands.edit,
        _plain("/edit", "Run turn N again with a new message (the rest of the line: N TEXT), in a new branch."),
        "/edit N TEXT",
        "run turn N again with TEXT in a new branch beside this one, and continue there",
        text=True,
    ),
    "regenerate": SlashCommand(
        branch_commands.regenerate,
        lambda: branch_commands.regenerate_parser(
            _parser("/regenerate", "Run a turn again with its own message, in a new branch.")
        ),
        "/regenerate [N]",
        "run the last turn (or turn N) again in a new branch, and continue there",
    ),
    "image": SlashCommand(
        image, _image_parser, "/image PATH [--clear]", "attach an image file to your next message", text=True
    ),
}
