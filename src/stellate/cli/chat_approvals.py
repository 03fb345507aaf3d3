"""How ``stellate chat`` asks about tool calls waiting for approval: a y / n / edit prompt per call.

After a turn pauses (and when the chat enters a paused session), each waiting call is shown with its
arguments and the next line answers it: ``y`` approves, ``n`` denies (``n REASON`` tells the model why),
``e`` asks for edited arguments (one JSON object) and approves with them. An empty line or the end of input
leaves the turn paused; the next chat on the session asks again. The decision that settles the turn streams
the resumed turn like any other.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich.text import Text

from stellate.cli.exit_codes import error_line
from stellate.cli.render import clip
from stellate.engine.approval import PendingApproval
from stellate.errors import StellateError

if TYPE_CHECKING:
    from stellate.cli.chat import ChatSession

__all__ = ["QUESTION", "ask_approvals"]

QUESTION = "  ? approve {name}({arguments})  [y]es / [n]o [reason] / [e]dit"
EDIT_QUESTION = "  arguments for {name} (one JSON object):"
LEFT_PAUSED = "(the turn stays paused: {count} tool call(s) wait for approval; chat on this session to decide)"


def ask_approvals(chat: ChatSession) -> None:
    """Ask about every call of the current session waiting for approval, until none waits or the user stops."""
    while True:
        pending = chat.call(chat.agent.pending_approvals, chat.current)
        if not pending:
            return
        if not _ask_one(chat, pending[0]):
            chat.consoles.out.print(Text(LEFT_PAUSED.format(count=len(pending)), style="yellow"))
            return


def _ask_one(chat: ChatSession, pending: PendingApproval) -> bool:
    """Ask about one call and decide it; False when the user left it undecided."""
    out = chat.consoles.out
    out.print(Text(QUESTION.format(name=pending.name, arguments=clip(pending.arguments, 200)), style="magenta"))
    answer = chat.reader.read()
    if not answer:
        return False
    try:
        return _answer(chat, pending, answer)
    except StellateError as exc:  # edited arguments that are not JSON, or another approver was first
        print(error_line(exc), file=sys.stderr, flush=True)
        return True


def _answer(chat: ChatSession, pending: PendingApproval, answer: str) -> bool:
    out = chat.consoles.out
    word, _, rest = answer.partition(" ")
    word = word.lower()
    if word in ("y", "yes"):
        chat.decide(pending, approve=True)
    elif word in ("n", "no"):
        chat.decide(pending, approve=False, reason=rest.strip() or None)
    elif word in ("e", "edit"):
        out.print(Text(EDIT_QUESTION.format(name=pending.name), style="magenta"))
        edited = chat.reader.read()
        if not edited:
            return False
        chat.decide(pending, approve=True, arguments=edited)
    else:
        out.print(Text("  answer y, n (with a reason if you like) or e", style="yellow"))
    return True
