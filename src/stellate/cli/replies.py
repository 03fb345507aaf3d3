"""How a turn is shown as it streams: the assistant's text, its tool calls and their results, and notes.

On a terminal the text is rendered as markdown and wrapped by words: blocks that are complete (up to a blank
line outside a code fence) are printed for good as they arrive, and the block still growing is previewed in
place underneath. Piped output gets the raw text, streamed as it comes, so logs and tests read it verbatim.
The speaker's name is printed with the first text of a reply, so a call that only asks for tools (or fails)
leaves no empty ``assistant ›`` line behind.
"""

from __future__ import annotations

import datetime

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from stellate.cli.render import clip
from stellate.engine.events import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantReply,
    TextChunk,
    ToolCallFinished,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnWaiting,
)

__all__ = ["MarkdownStream", "TurnPrinter", "split_complete_blocks", "waiting_line"]

_FENCES = ("```", "~~~")


def split_complete_blocks(text: str) -> tuple[str, str]:
    """Split markdown into the blocks that are complete and the block still being written.

    A block is complete once a blank line follows it outside a code fence; a fence's content is never cut.
    """
    cut, inside_fence, offset = 0, False, 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if line.lstrip().startswith(_FENCES):
            inside_fence = not inside_fence
        elif not inside_fence and not line.strip() and line.endswith("\n"):
            cut = offset
    return text[:cut], text[cut:]


class MarkdownStream:
    """Markdown printed as it streams in: complete blocks for good, the growing block as a live preview."""

    def __init__(self, console: Console, *, preview: bool = True) -> None:
        self.console = console
        self._pending = ""
        self._live: Live | None = None
        if preview:
            self._live = Live(console=console, auto_refresh=False, transient=True, vertical_overflow="ellipsis")
            self._live.start()

    def feed(self, text: str) -> None:
        """Add streamed text."""
        done, self._pending = split_complete_blocks(self._pending + text)
        if done.strip():
            self.console.print(Markdown(done))  # while the preview runs, rich prints this above it
        if self._live is not None:
            self._live.update(Markdown(self._pending), refresh=True)

    def close(self) -> None:
        """Print what is left and stop the preview."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._pending.strip():
            self.console.print(Markdown(self._pending))
        self._pending = ""


class TurnPrinter:
    """Prints a turn as it streams: the assistant's text, each tool call and its result, and notes.

    Args:
        console: Where to print.
        speaker: The name shown before the assistant's text.
        markdown: Render replies as markdown; by default only on a terminal.
    """

    def __init__(self, console: Console, *, speaker: str = "assistant", markdown: bool | None = None) -> None:
        self.console = console
        self.speaker = speaker
        self.markdown = console.is_terminal if markdown is None else markdown
        self._stream: MarkdownStream | None = None
        self._in_reply = False
        self._mid_line = False

    def __call__(self, event: TurnEvent) -> None:
        """Print one event."""
        if isinstance(event, TextChunk):
            self._text(event.text)
        elif isinstance(event, AssistantReply):
            self._end_reply()
        elif isinstance(event, ToolCallStarted):
            self.line(Text(f"  ⚙ {event.call.name}({clip(event.call.arguments, 140)})", style="yellow"))
        elif isinstance(event, ToolCallFinished):
            style = "red" if event.is_error else "dim"
            self.line(Text(f"    ↳ {clip(event.content, 140)}", style=style))
        elif isinstance(event, ApprovalRequested):
            self.line(Text(f"  ⏸ {event.call.name}({clip(event.call.arguments, 140)}) waits for approval", "magenta"))
        elif isinstance(event, ApprovalDecided):
            self.line(Text(f"  ✓ {event.name} {event.decision} by {event.by}", style="magenta"))
        elif isinstance(event, TurnFinished) and event.result.reason not in ("completed", "awaiting_approval"):
            self.line(Text(f"(turn {event.result.turn} ended: {event.result.reason})", style="yellow"))
        elif isinstance(event, TurnWaiting):
            self.line(Text(waiting_line(event), style="yellow"))

    def line(self, text: Text) -> None:
        """Print a line of its own, after any reply text in progress."""
        self._end_reply()
        self.console.print(text, soft_wrap=not self.console.is_terminal)  # a terminal wraps it by words

    def finish(self) -> None:
        """End a reply left open (the turn ended, failed or was interrupted)."""
        self._end_reply()

    def _text(self, text: str) -> None:
        if not text:
            return
        if not self._in_reply:
            self._in_reply = True
            if self.markdown:
                self.console.print(Text(f"{self.speaker} ›", style="bold green"))
                self._stream = MarkdownStream(self.console, preview=self.console.is_terminal)
            else:
                self.console.print(Text(f"{self.speaker} › ", style="bold green"), end="")
        if self._stream is not None:
            self._stream.feed(text)
        else:
            self.console.print(Text(text), end="", soft_wrap=True)
            self._mid_line = not text.endswith("\n")

    def _end_reply(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._mid_line:
            self.console.print()
            self._mid_line = False
        self._in_reply = False


def waiting_line(event: TurnWaiting) -> str:
    """The one line said while a turn waits for another writer: who, since when, how long at most, how to give up."""
    holder = event.holder or "another writer"
    since = ""
    if event.held_since is not None:
        since = f" since {datetime.datetime.fromtimestamp(event.held_since / 1000).strftime('%H:%M:%S')}"
    return (
        f"(waiting for the turn {holder} runs on this session{since}; at most {event.wait_seconds:g} s, "
        "then it gives up; Ctrl-C gives up now)"
    )
