"""``stellate chat``: a conversation in the terminal, streamed, with slash commands to fork and steer.

The prompt loop runs in the main thread and hands every operation to one event loop in a background
thread (an anyio blocking portal, as `stellate.sync` does), so Ctrl-C at the prompt ends the chat at once
and Ctrl-C during a reply aborts just that turn (the log records it as aborted and stays valid).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from rich.text import Text

from stellate.agent import Agent
from stellate.cli.console import Consoles
from stellate.cli.database import Database
from stellate.cli.exit_codes import EXIT_INTERRUPTED, error_line
from stellate.cli.invocation import Invocation
from stellate.cli.lookup import resolve_session
from stellate.cli.providers import build_adapter, public_providers
from stellate.cli.render import TurnPrinter, plural
from stellate.cli.slash import QUIT, run_command
from stellate.engine.events import AgentEvent, SessionForked, TurnEvent
from stellate.errors import NotFoundError, StellateError
from stellate.llm import LLMAdapter
from stellate.store import BaseStore
from stellate.sync import iterate_in_portal

__all__ = ["ChatSession", "add_parser"]

T = TypeVar("T")

ROOT_LABEL = "Chat"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``chat``."""
    chat_parser = commands.add_parser(
        "chat",
        parents=[common],
        help="talk to a model in the terminal (resumes the last session)",
        description="Streams replies and tool calls; /help lists the slash commands.",
    )
    chat_parser.add_argument(
        "--session", metavar="ID", help="session to continue: id, id prefix or label (default: the last one)"
    )
    chat_parser.add_argument("--provider", help=f"model provider: {', '.join(public_providers())}")
    chat_parser.add_argument("--model", help="model name (for local: a GGUF file)")
    chat_parser.add_argument("--base-url", dest="base_url", help="API root of an OpenAI-compatible server")
    chat_parser.set_defaults(handler=chat)


def chat(inv: Invocation) -> int:
    """Run the chat until /quit or end of input."""
    llm = build_adapter(inv.provider())  # fails before the database is touched when nothing is configured
    database = inv.database()
    wanted: str | None = inv.args.session
    if wanted is not None and not database.exists():
        raise NotFoundError(f"no session {wanted!r}: {database.describe()} does not exist", session_id=wanted)
    with start_blocking_portal("asyncio") as portal:
        try:
            opened = inv.open(create=True, llm=llm, builtin_tools=["create_session"])
            with portal.wrap_async_context_manager(opened) as (store, agent):
                session = ChatSession(portal, store, agent, database=database, consoles=inv.consoles, llm=llm)
                session.start(wanted)
                return session.loop()
        finally:
            close = getattr(llm, "aclose", None)
            if close is not None:
                portal.call(close)


class ChatSession:
    """The state of one chat: the agent, the current session, and the terminal."""

    def __init__(
        self,
        portal: BlockingPortal,
        store: BaseStore,
        agent: Agent,
        *,
        database: Database,
        consoles: Consoles,
        llm: LLMAdapter,
    ) -> None:
        self.portal = portal
        self.store = store
        self.agent = agent
        self.database = database
        self.consoles = consoles
        self.llm = llm
        self.current = ""
        self.interactive = sys.stdin.isatty()
        agent.add_hook(self._announce_fork, types=["session_forked"])

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the chat's event loop and return its result."""
        return self.portal.call(fn, *args)

    def start(self, wanted: str | None) -> None:
        """Enter ``wanted``, else the last session (if still active), else a new root."""
        if wanted is None:
            wanted = self._resumable(self.database.last_session())
        if wanted is None:
            wanted = self.call(lambda: self.agent.create_session(label=ROOT_LABEL)).id
        self.switch(wanted)
        out = self.consoles.out
        out.print(Text(f"stellate chat · {self.llm.provider}/{self.llm.model} · /help for commands", "dim"))

    def _resumable(self, session_id: str | None) -> str | None:
        if session_id is None:
            return None
        try:
            digest = self.call(self.agent.get_session_digest, session_id)
        except NotFoundError:
            return None
        return digest.id if digest.status == "active" else None

    def switch(self, reference: str) -> None:
        """Make the session ``reference`` names (id, id prefix or label) current, and remember it for the next chat.

        Raises:
            NotFoundError: no session matches.
            UsageError: several sessions match.
        """
        digest = self.call(self.agent.get_session_digest, self.call(resolve_session, self.store, reference))
        self.current = digest.id
        self.database.remember_session(digest.id)
        status = "" if digest.status == "active" else f" [{digest.status}]"
        self.consoles.out.print(
            Text(
                f"session {digest.id} · {digest.label or '(no label)'} · {plural(digest.turn_count, 'turn')}{status}",
                "cyan",
            )
        )

    def loop(self) -> int:
        """Read and run lines until /quit or end of input; a failed line is reported and the chat goes on."""
        while True:
            try:
                line = self._read()
            except KeyboardInterrupt:
                self.consoles.out.print()
                return EXIT_INTERRUPTED
            if line is None:
                return 0
            if line and self._run_line(line) is QUIT:
                return 0

    def _read(self) -> str | None:
        if self.interactive:
            try:
                return input("you › ").strip()
            except EOFError:
                return None
        raw = sys.stdin.readline()
        if not raw:
            return None
        line = raw.strip()
        if line:
            self.consoles.out.print(Text.assemble(("you › ", "bold cyan"), line), soft_wrap=True)
        return line

    def _run_line(self, line: str) -> object:
        try:
            if line.startswith("/"):
                return run_command(self, line)
            self.turn(line)
        except StellateError as exc:
            print(error_line(exc), file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"stellate: {exc.filename or ''}: {exc.strerror or exc} [io_error]", file=sys.stderr, flush=True)
        return None

    def turn(self, text: str) -> None:
        """Run one turn on the current session, printing it as it streams."""
        printer = TurnPrinter(self.consoles.out)
        interrupted = False
        try:
            for event in self._stream(lambda: self.agent.stream(self.current, text)):
                printer(event)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            printer.finish()  # also when the turn failed: the error goes on a line of its own
        if interrupted:
            self.consoles.err.print("(interrupted: the turn was aborted)")

    def _stream(self, start: Callable[[], AsyncIterator[TurnEvent]]) -> Iterator[TurnEvent]:
        return iterate_in_portal(self.portal, start)

    def _announce_fork(self, event: AgentEvent) -> None:
        if isinstance(event, SessionForked):
            text = f"  ⑂ new branch {event.label!r}: {event.session_id}  (/switch {event.session_id})"
            self.consoles.out.print(Text(text, style="magenta"), soft_wrap=True)
