"""The chat on a real terminal: a pseudo-terminal drives line editing, history, completion and multi-line input."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from cli_support import Forest, events_of, session_ids

LEFT, UP, ALT_ENTER, TAB, CTRL_D = "\x1b[D", "\x1b[A", "\x1b\r", "\t", "\x04"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(autouse=True)
def scripted_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hidden scripted provider, which answers ``(scripted) you said: ...``."""
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("PROMPT_TOOLKIT_NO_CPR", "1")  # no cursor-position query to wait for
    monkeypatch.setenv("COLUMNS", "100")  # the pseudo-terminal's width


class Terminal:
    """``stellate chat`` in a pseudo-terminal."""

    def __init__(self, *args: str) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "stellate.cli", "chat", *args],
            env=dict(os.environ),
            encoding="utf-8",
            timeout=20,
            dimensions=(30, 100),
        )
        self.child.expect("you › ")

    def type(self, *keys: str) -> None:
        for key in keys:
            self.child.send(key)

    def expect(self, pattern: str) -> str:
        self.child.expect(pattern)
        return ANSI.sub("", self.child.before or "")

    def leave(self) -> tuple[int | None, str]:
        """Ctrl-D at an empty prompt; returns the exit status and what was printed last."""
        self.type(CTRL_D)
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus, self.child.before or ""


@pytest.fixture
def terminal() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for each in opened:
        if each.child.isalive():
            each.child.terminate(force=True)


def _open(opened: list[Terminal], *args: str) -> Terminal:
    opened.append(Terminal(*args))
    return opened[-1]


def _user_messages(db: Path, session_id: str | None = None) -> list[object]:
    [only] = [session_id] if session_id else session_ids(db)
    return [data for _, kind, data in events_of(db, only) if kind == "user/message"]


def test_arrow_keys_edit_the_line_and_never_reach_the_model(terminal: list[Terminal], db: Path) -> None:
    chat = _open(terminal)
    chat.type("hello wrld", LEFT * 3, "o", "\r")
    chat.expect(r"you said: hello world")
    assert chat.leave()[0] == 0
    assert _user_messages(db) == [{"content": "hello world"}]


def test_history_is_kept_across_runs_and_recalled_with_up(terminal: list[Terminal], db: Path) -> None:
    first = _open(terminal)
    first.type("remember me\r")
    first.expect("you said: remember me")
    assert first.leave()[0] == 0
    second = _open(terminal)
    second.type(UP, LEFT * 2, "!", "\r")  # recalled, then edited
    second.expect("you said: remember !me")
    assert second.leave()[0] == 0
    assert _user_messages(db) == [{"content": "remember me"}, {"content": "remember !me"}]


def test_tab_completes_slash_commands_and_session_labels(terminal: list[Terminal], forest: Forest) -> None:
    chat = _open(terminal, "--session", forest.child)
    chat.type("/sw", TAB)
    chat.expect("itch")  # the completed rest of the command is drawn
    chat.type("Ro", TAB)
    chat.expect("ot")
    chat.type("\r")
    chat.expect(f"session {forest.root} · Root")
    assert chat.leave()[0] == 0


def test_alt_enter_starts_a_new_line_and_enter_sends_both(terminal: list[Terminal], db: Path) -> None:
    chat = _open(terminal)
    chat.type("line one", ALT_ENTER, "line two\\", "\r", "line three\r")
    chat.expect("you said: line one")
    chat.type("/memory", ALT_ENTER, "first  line", ALT_ENTER, "second line\r")
    chat.expect("second line")
    assert chat.leave()[0] == 0
    assert _user_messages(db) == [{"content": "line one\nline two\nline three"}]
    [session] = session_ids(db)
    memory = [data for _, kind, data in events_of(db, session) if kind == "memory/put"]
    assert memory == [{"content": "first  line\nsecond line"}]


def test_ctrl_d_leaves_the_shell_prompt_on_a_line_of_its_own(terminal: list[Terminal]) -> None:
    chat = _open(terminal)
    status, last = chat.leave()
    assert status == 0
    visible = ANSI.sub("", last)
    assert visible.rstrip(" \r").endswith("\n")  # the line is ended: the shell's prompt starts afresh
    assert visible.rstrip("\r\n ").endswith("you ›")  # and nothing was typed after the chat's prompt


def test_typing_at_a_terminal_with_the_output_piped_gets_a_plain_prompt(terminal: list[Terminal]) -> None:
    child = pexpect.spawn(
        "bash", ["-c", f"{sys.executable} -m stellate.cli chat | cat"], env=dict(os.environ), encoding="utf-8"
    )
    child.expect("you › ")
    child.send("plain line\r")
    child.expect("you said: plain line")
    child.send(CTRL_D)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
