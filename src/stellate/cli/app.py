"""The ``stellate`` command: its parser, and the one place where errors become a line and an exit status."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Coroutine, Sequence

from stellate import __version__
from stellate.cli.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_STATUS, error_line, exit_status
from stellate.cli.parsing import CommandParser
from stellate.errors import StellateError

__all__ = ["build_parser", "run"]

_EPILOG = (
    "Settings: --db > $STELLATE_DB > ./stellate.db; provider: flags > STELLATE_PROVIDER, STELLATE_MODEL, "
    "STELLATE_BASE_URL, STELLATE_API_KEY (or OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY) > the config "
    "file (--config, $STELLATE_CONFIG, ~/.config/stellate/config.toml)."
)


#: Each command: the module that registers and runs it, and its line in ``stellate --help`` (the same as the
#: module registers; tests/cli/test_cli_app.py checks it).
_COMMANDS = {
    "demo": ("stellate.cli.demo", "grow a small forest offline (scripted model, no API key)"),
    "chat": ("stellate.cli.chat", "talk to a model in the terminal (resumes the last session)"),
    "sessions": ("stellate.cli.sessions", "list, show, export, import, fork, rename, archive and delete sessions"),
    "db": ("stellate.cli.db", "the database: its path, schema migrations, pruning"),
    "serve": ("stellate.cli.serve", "serve the REST + SSE API (pip install 'stellate[server]')"),
    "keys": ("stellate.cli.keys", "API keys of `stellate serve`: create, list, revoke"),
}


def build_parser(argv: Sequence[str] | None = None) -> CommandParser:
    """The whole command line; with ``argv``, only the commands it names are built in full.

    A command's module imports what its handlers need (the agent, the store, rich's tables), which costs a fresh
    process more than the rest of the command (issue 22): ``stellate --help`` imports none of them, and
    ``stellate sessions list`` only ``stellate.cli.sessions``. Every other command is a placeholder with its
    line of help, never run: a command named in ``argv`` is always built in full.
    """
    common = CommandParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH", help="database file or store URL")
    common.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE", help="TOML config file")
    common.add_argument(
        "--schema", default=argparse.SUPPRESS, metavar="NAME", help="PostgreSQL schema of the tables (made if missing)"
    )
    parser = CommandParser(
        prog="stellate",
        description="Branching LLM conversations: a forest of sessions on an append-only event log.",
        epilog=_EPILOG,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"stellate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    named = set(_COMMANDS) if argv is None else set(argv) & set(_COMMANDS)
    for name, (module, line) in _COMMANDS.items():
        if name in named:
            importlib.import_module(module).add_parser(commands, common)
        else:
            commands.add_parser(name, help=line)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: the process's arguments) and return its exit status."""
    try:
        args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
        # Imported once the command is known: rich, asyncio, the store and the config file are not for --help.
        from stellate.cli.console import make_consoles
        from stellate.cli.invocation import Invocation

        invocation = Invocation(args, make_consoles(), os.environ)
        invocation.check_named_config()
        result = args.handler(invocation)
        if isinstance(result, Coroutine):
            import asyncio

            result = asyncio.run(result)
        return int(result)
    except StellateError as exc:
        return _fail(error_line(exc), exit_status(exc))
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"stellate: {where}{exc.strerror or exc} [io_error]", EXIT_STATUS["io_error"])
    except KeyboardInterrupt:
        return _fail("stellate: interrupted", EXIT_INTERRUPTED)
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    except Exception as exc:
        if os.environ.get("STELLATE_DEBUG"):
            raise
        line = f"stellate: internal error: {type(exc).__name__}: {exc} (STELLATE_DEBUG=1 shows the traceback)"
        return _fail(" ".join(line.split()), EXIT_INTERNAL)


def _fail(line: str, status: int) -> int:
    sys.stdout.flush()
    print(line, file=sys.stderr, flush=True)
    return status
