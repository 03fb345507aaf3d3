"""The ``stellate`` command: its parser, and the one place where errors become a line and an exit status."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import sys
from collections.abc import Sequence

from stellate import __version__
from stellate.cli import chat, db, demo, keys, serve, sessions
from stellate.cli.console import make_consoles
from stellate.cli.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_STATUS, error_line, exit_status
from stellate.cli.invocation import Invocation
from stellate.cli.parsing import CommandParser
from stellate.errors import StellateError

__all__ = ["build_parser", "run"]

_EPILOG = (
    "Settings: --db > $STELLATE_DB > ./stellate.db; provider: flags > STELLATE_PROVIDER, STELLATE_MODEL, "
    "STELLATE_BASE_URL, STELLATE_API_KEY (or OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY) > the config "
    "file (--config, $STELLATE_CONFIG, ~/.config/stellate/config.toml)."
)


def build_parser() -> CommandParser:
    """The whole command line."""
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
    for module in (demo, chat, sessions, db, serve, keys):
        module.add_parser(commands, common)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: the process's arguments) and return its exit status."""
    consoles = make_consoles()
    try:
        args = build_parser().parse_args(argv)
        invocation = Invocation(args, consoles, os.environ)
        invocation.check_named_config()
        result = args.handler(invocation)
        if inspect.iscoroutine(result):
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
