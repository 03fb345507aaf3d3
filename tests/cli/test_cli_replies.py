"""How a streamed turn is printed: markdown on terminals (wrapped by words), raw text on pipes."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from stellate.cli.replies import TurnPrinter, split_complete_blocks
from stellate.engine.events import AssistantReply, TextChunk, TurnEvent

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")

REPLY = (
    "Here is **the plan**, in short:\n\n"
    "- tuition first\n- then rent\n\n"
    "```python\nprint('keep  this')\n\nprint('one block')\n```\n\n"
    "A closing sentence that is long enough to need wrapping, with extraordinarily long words inside."
)


@pytest.mark.parametrize(
    ("text", "complete", "growing"),
    [
        ("one\n\ntwo", "one\n\n", "two"),
        ("one\ntwo", "", "one\ntwo"),
        ("```\na\n\nb\n", "", "```\na\n\nb\n"),  # a blank line inside a fence is not a block end
        ("```\na\n\nb\n```\n\nnext", "```\na\n\nb\n```\n\n", "next"),
        ("one\n\n", "one\n\n", ""),
    ],
)
def test_only_blocks_followed_by_a_blank_line_outside_a_fence_are_complete(
    text: str, complete: str, growing: str
) -> None:
    assert split_complete_blocks(text) == (complete, growing)


def _print_reply(console: Console, chunk_size: int, *, markdown: bool | None = None) -> None:
    printer = TurnPrinter(console, markdown=markdown)
    for start in range(0, len(REPLY), chunk_size):
        printer(TextChunk(session_id="s", text=REPLY[start : start + chunk_size]))
    printer(AssistantReply(session_id="s", round=1, content=REPLY))
    printer.finish()


def test_markdown_replies_are_rendered_and_wrapped_by_words() -> None:
    stream = io.StringIO()
    _print_reply(Console(file=stream, width=40), chunk_size=7, markdown=True)  # what stays on a terminal
    lines = [line.rstrip() for line in stream.getvalue().splitlines()]
    assert lines[0] == "assistant ›"
    assert "**" not in "\n".join(lines) and "```" not in "\n".join(lines)
    assert any("• tuition first" in line for line in lines)
    assert all(len(line) <= 40 for line in lines)
    words = "A closing sentence that is long enough to need wrapping, with extraordinarily long words inside.".split()
    printed_words = " ".join(lines).split()
    assert all(word in printed_words for word in words)  # every word whole: none was cut at the margin
    assert any("print('keep  this')" in line for line in lines)  # code keeps its spacing


def test_on_a_terminal_the_growing_block_is_previewed_and_then_printed_for_good() -> None:
    stream = io.StringIO()
    _print_reply(Console(file=stream, force_terminal=True, width=40, color_system=None), chunk_size=7)
    raw = stream.getvalue()
    assert "\x1b[2K" in raw  # the preview was drawn and erased in place
    tail = ANSI.sub("", raw.rsplit("\x1b[2K", 1)[1])
    assert "extraordinarily" in tail and "**" not in tail


def test_on_a_pipe_the_reply_is_the_raw_text_after_the_speaker() -> None:
    stream = io.StringIO()
    _print_reply(Console(file=stream, width=40), chunk_size=5)
    assert stream.getvalue() == f"assistant › {REPLY}\n"


def test_a_reply_without_text_prints_no_speaker() -> None:
    stream = io.StringIO()
    printer = TurnPrinter(Console(file=stream, force_terminal=True, width=40))
    events: list[TurnEvent] = [TextChunk(session_id="s", text=""), AssistantReply(session_id="s", round=1, content="")]
    for event in events:
        printer(event)
    printer.finish()
    assert "assistant" not in stream.getvalue()
