r"""Reading the chat's input: a line editor on a terminal, plain lines from a pipe.

On a terminal, prompt-toolkit edits the line (arrows, Home/End, Ctrl-W...), keeps a history across runs
(Up/Down, Ctrl-R), completes slash commands, session labels and profile names with Tab, and takes several
lines: Alt-Enter (or Esc then Enter) starts a new line, as does a line ending in ``\``; a paste keeps its
line breaks. Enter sends. Piped input is read line by line and echoed, so a transcript reads like a session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Protocol

try:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import CompleteEvent, Completer, Completion
    from prompt_toolkit.document import Document
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.styles import Style
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by tests/cli/test_cli_app.py
    raise ImportError('the stellate command needs prompt-toolkit: pip install "stellate[cli]"') from exc
from rich.console import Console
from rich.text import Text

__all__ = ["ChatCompleter", "LineReader", "PipeReader", "PlainPromptReader", "TerminalReader", "history_path"]

PROMPT = "you › "


class LineReader(Protocol):
    """Where the chat's lines come from."""

    def read(self) -> str | None:
        """The next line, or None at end of input (Ctrl-D, end of the pipe).

        Raises:
            KeyboardInterrupt: Ctrl-C at the prompt.
        """


class PipeReader:
    """Lines from a pipe or a file, echoed after the prompt so the output reads like the conversation."""

    def __init__(self, stream: IO[str], console: Console) -> None:
        self.stream = stream
        self.console = console

    def read(self) -> str | None:
        """The next non-empty line, stripped; None at the end."""
        raw = self.stream.readline()
        if not raw:
            return None
        line = raw.strip()
        if line:
            self.console.print(Text.assemble((PROMPT, "bold cyan"), line), soft_wrap=True)
        return line


class PlainPromptReader:
    """Lines typed at a terminal whose output goes elsewhere (``stellate chat | tee log``): no editor to draw."""

    def read(self) -> str | None:
        """The next line, stripped; None at end of input."""
        try:
            return input(PROMPT).strip()
        except EOFError:
            print()  # end the prompt's line
            return None


def history_path(env: dict[str, str] | None = None) -> Path:
    """The chat's history file: ``$XDG_STATE_HOME/stellate/history`` (default ``~/.local/state``)."""
    values = os.environ if env is None else env
    base = Path(values.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "stellate" / "history"


class ChatCompleter(Completer):
    """Completes slash commands, then session labels after ``/switch`` and profile names after ``--profile``.

    Args:
        commands: Slash command names, without the slash.
        sessions: Returns the labels and ids to offer (called when a completion is asked for).
        profiles: Returns the profile names to offer.
    """

    def __init__(
        self,
        commands: Iterable[str],
        *,
        sessions: Callable[[], Iterable[str]],
        profiles: Callable[[], Iterable[str]],
    ) -> None:
        self.commands = sorted(commands)
        self.sessions = sessions
        self.profiles = profiles

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """Completions for the text before the cursor."""
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        if " " not in text:
            yield from _starting_with(text[1:], (f"{name} " for name in self.commands), len(text) - 1)
            return
        if text.startswith("/switch "):
            typed = text.removeprefix("/switch ").lstrip()
            yield from _starting_with(typed, self.sessions(), len(typed))
            return
        words = text.split(" ")
        if len(words) >= 2 and words[-2] == "--profile":
            yield from _starting_with(words[-1], self.profiles(), len(words[-1]))


def _starting_with(typed: str, options: Iterable[str], replace: int) -> Iterator[Completion]:
    folded = typed.casefold()
    for option in dict.fromkeys(options):
        if option.casefold().startswith(folded):
            yield Completion(option, start_position=-replace)


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\") and buffer.document.is_cursor_at_the_end:
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    return bindings


class TerminalReader:
    """A line editor with history and completion (prompt-toolkit).

    Args:
        completer: What Tab completes.
        history: The history file (created with its folder when missing).
    """

    def __init__(self, completer: Completer, *, history: Path) -> None:
        history.parent.mkdir(parents=True, exist_ok=True)
        self.session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=completer,
            complete_while_typing=False,
            key_bindings=_key_bindings(),
            style=Style.from_dict({"you": "bold ansicyan"}),
            prompt_continuation=lambda width, line_number, wrap_count: "." * (width - 1) + " ",
        )

    def read(self) -> str | None:
        """The next line, stripped (it may hold several lines); None after Ctrl-D on an empty line."""
        try:
            return self.session.prompt(FormattedText([("class:you", PROMPT)])).strip()
        except EOFError:  # prompt-toolkit has ended the line: the shell's prompt starts on a line of its own
            return None
