"""The chat's ``/edit`` and ``/regenerate``: run a past turn again in a new branch, and continue there.

The branch is cut just before the turn (by reference); the session it came from keeps its turns.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TypeVar

from stellate.agent.branching import last_turn, prepare_edit
from stellate.cli.parsing import CommandParser
from stellate.errors import UsageError

if TYPE_CHECKING:
    from stellate.cli.chat import ChatSession

__all__ = ["edit", "regenerate", "regenerate_parser"]

P = TypeVar("P", bound=CommandParser)


def edit(chat: ChatSession, args: argparse.Namespace) -> None:
    """``/edit N TEXT``: run turn N again with TEXT as its message, in a new branch, and switch to it."""
    number, _, text = args.text.partition(" ")
    if not text.strip():
        number, _, text = args.text.partition("\n")
    turn = _turn_number("/edit", number)
    if not text.strip():
        raise UsageError("/edit needs a turn number and the new message: /edit N TEXT (see /edit --help)")
    _run_again(chat, turn, text.strip())


def regenerate(chat: ChatSession, args: argparse.Namespace) -> None:
    """``/regenerate [N]``: run turn N (default: the last) again with its own message, in a new branch."""
    turn = args.turn if args.turn is not None else chat.call(last_turn, chat.agent, chat.current)
    _run_again(chat, turn, None)


def _run_again(chat: ChatSession, turn: int, text: str | None) -> None:
    chat.switching_to_fork = True  # the switch line below names the branch
    try:
        branch, content = chat.call(lambda: prepare_edit(chat.agent, chat.current, turn, text))
    finally:
        chat.switching_to_fork = False
    chat.switch(branch.id)
    chat.turn(content)


def _turn_number(prog: str, word: str) -> int:
    try:
        return int(word)
    except ValueError:
        raise UsageError(f"{prog} needs a turn number first, not {word!r} (see {prog} --help)") from None


def regenerate_parser(parser: P) -> P:
    """Add ``/regenerate``'s arguments to ``parser``."""
    parser.add_argument("turn", nargs="?", type=int, help="the turn to run again (default: the last)")
    return parser
