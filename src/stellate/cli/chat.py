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
from stellate.cli.chat_approvals import ask_approvals
from stellate.cli.console import Consoles
from stellate.cli.database import Database
from stellate.cli.exit_codes import EXIT_INTERRUPTED, error_line, exit_status
from stellate.cli.invocation import Invocation
from stellate.cli.lines import (
    ChatCompleter,
    LineReader,
    PipeReader,
    PlainPromptReader,
    TerminalReader,
    history_path,
)
from stellate.cli.lookup import resolve_session
from stellate.cli.providers import build_adapter, describe_provider, public_providers, served_model
from stellate.cli.render import plural
from stellate.cli.replies import TurnPrinter
from stellate.cli.slash import COMMANDS, QUIT, run_command
from stellate.cli.usage import add_price_option, turn_line
from stellate.engine.approval import PendingApproval
from stellate.engine.events import AgentEvent, SessionForked, TurnEvent, TurnFinished
from stellate.errors import NotFoundError, StellateError
from stellate.llm import LLMAdapter, RetryNotice
from stellate.log.images import ImageRef
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
    add_price_option(chat_parser)
    chat_parser.set_defaults(handler=chat)


def chat(inv: Invocation) -> int:
    """Run the chat until /quit or end of input."""
    settings, offered = served_model(inv.provider())  # a server serving one model: talk to it by its name
    listeners: list[Callable[[RetryNotice], None]] = []  # the chat, once it exists, prints each retry

    def on_retry(notice: RetryNotice) -> None:
        for listener in listeners:
            listener(notice)

    llm = build_adapter(settings, on_retry=on_retry)
    database = inv.database()  # the adapter is built first: nothing is created when no provider is configured
    wanted: str | None = inv.args.session
    if wanted is not None and not database.exists():
        raise NotFoundError(f"no session {wanted!r}: {database.describe()} does not exist", session_id=wanted)
    with start_blocking_portal("asyncio") as portal:
        try:
            opened = inv.open(create=True, llm=llm, builtin_tools=["create_session"])
            with portal.wrap_async_context_manager(opened) as (store, agent):
                session = ChatSession(portal, store, agent, database=database, consoles=inv.consoles, llm=llm)
                listeners.append(session.announce_retry)
                session.start(wanted, banner=describe_provider(settings, llm, offered=offered))
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
        self.turns = TurnTally()
        self.printer: TurnPrinter | None = None
        self.switching_to_fork = False
        """True while ``/fork`` makes a branch it then switches to: no ``(/switch ...)`` hint for that one."""
        self.pending_images: list[ImageRef] = []
        """Images ``/image`` attached to the next message."""
        self.reader = self._reader()
        agent.add_hook(self._announce_fork, types=["session_forked"])

    def _reader(self) -> LineReader:
        if not sys.stdin.isatty():
            return PipeReader(sys.stdin, self.consoles.out)
        if not sys.stdout.isatty():
            return PlainPromptReader()
        completer = ChatCompleter(COMMANDS, sessions=self._session_names, profiles=self._profile_names)
        return TerminalReader(completer, history=history_path())

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the chat's event loop and return its result."""
        return self.portal.call(fn, *args)

    def start(self, wanted: str | None, *, banner: str) -> None:
        """Enter ``wanted``, else the last session (if still active), else a new root."""
        if wanted is None:
            wanted = self._resumable(self.database.last_session())
        if wanted is None:
            wanted = self.call(lambda: self.agent.create_session(label=ROOT_LABEL)).id
        self.switch(wanted)
        self.consoles.out.print(Text(f"stellate chat · {banner} · /help for commands", "dim"))

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
        if digest.awaiting_approval:
            ask_approvals(self)

    def loop(self) -> int:
        """Read and run lines until /quit or end of input; a failed line is reported and the chat goes on.

        Returns:
            0, or when every turn of the chat failed, the exit status of the last failure (so a script piping
            lines in can tell); 130 after Ctrl-C at the prompt.
        """
        while True:
            try:
                line = self.reader.read()
            except KeyboardInterrupt:
                self.consoles.out.print()
                return EXIT_INTERRUPTED
            if line is None:
                return self.turns.exit_status()
            if line and self._run_line(line) is QUIT:
                return self.turns.exit_status()

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
        self.printer = printer = TurnPrinter(self.consoles.out)
        interrupted, finished = False, None
        try:
            images, self.pending_images = self.pending_images, []
            for event in self._stream(lambda: self.agent.stream(self.current, text, images=images)):
                printer(event)
                if isinstance(event, TurnFinished):
                    finished = event.result.turn
        except KeyboardInterrupt:
            interrupted = True
        except StellateError as exc:
            self.turns.failed(exc)
            raise
        finally:
            printer.finish()  # also when the turn failed: the error goes on a line of its own
            self.printer = None
        if interrupted:
            self.consoles.err.print("(interrupted: the turn was aborted)")
        else:
            self.turns.succeeded()
            if finished is not None:
                self._print_usage(finished)
            ask_approvals(self)

    def _print_usage(self, turn: int) -> None:
        """A dim line under the reply: the turn's tokens, time and cost (— where unknown)."""
        line = self.call(turn_line, self.agent, self.current, turn)
        if line is not None:
            self.consoles.out.print(Text(line, "dim"), soft_wrap=not self.consoles.out.is_terminal)

    def decide(
        self, pending: PendingApproval, *, approve: bool, arguments: str | None = None, reason: str | None = None
    ) -> None:
        """Decide one waiting tool call of the current session, printing the resumed turn as it streams."""
        self.printer = printer = TurnPrinter(self.consoles.out)
        try:
            for event in self._stream(
                lambda: self.agent.stream_decision(
                    self.current, pending.call_id, approve=approve, arguments=arguments, reason=reason, by="chat"
                )
            ):
                printer(event)
        finally:
            printer.finish()
            self.printer = None

    def _stream(self, start: Callable[[], AsyncIterator[TurnEvent]]) -> Iterator[TurnEvent]:
        return iterate_in_portal(self.portal, start)

    def announce_retry(self, notice: RetryNotice) -> None:
        """Say why nothing arrives yet: ``retrying in 1.1 s (HTTP 503, attempt 2 of 3)``."""
        line = Text(f"  ↻ {notice.describe()}", style="yellow")
        if self.printer is not None:
            self.printer.line(line)
        else:
            self.consoles.out.print(line, soft_wrap=not self.consoles.out.is_terminal)

    def _announce_fork(self, event: AgentEvent) -> None:
        if isinstance(event, SessionForked) and not self.switching_to_fork:
            text = f"  ⑂ new branch {event.label!r}: {event.session_id}  (/switch {event.session_id})"
            self.consoles.out.print(Text(text, style="magenta"), soft_wrap=not self.consoles.out.is_terminal)

    def _session_names(self) -> list[str]:
        records = self.call(self.store.list_sessions)
        return [*(r.slots.label for r in records if r.slots.label), *(r.id for r in records)]

    def _profile_names(self) -> list[str]:
        return sorted(self.agent.registries.profiles)


class TurnTally:
    """Counts the chat's turns, so that a chat in which every turn failed can end with a failing status."""

    def __init__(self) -> None:
        self.ok = 0
        self.last_failure: StellateError | None = None

    def succeeded(self) -> None:
        """A turn ran (an interrupted one counts: the user stopped it)."""
        self.ok += 1

    def failed(self, error: StellateError) -> None:
        """A turn failed with ``error``."""
        self.last_failure = error

    def exit_status(self) -> int:
        """0, unless turns were tried and all failed: then the status of the last failure."""
        if self.ok == 0 and self.last_failure is not None:
            return exit_status(self.last_failure)
        return 0
