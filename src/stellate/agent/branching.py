"""Edit and regenerate: a new branch cut just before a past turn, where that turn runs again.

The branch is an ordinary fork by reference, so it costs the same whatever the history's length: it inherits
the source's log up to the event just before the turn's ``turn/start`` (the end of the turn before, and the
free-standing events after it) and hangs beside the source, under the source's topology parent (a root's
branches hang from the root). The source's turns stay as they were; like every fork, it only gains the
``session/forked`` record at its head.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stellate.agent.topology import SessionDigest
from stellate.engine.config import ForkOptions
from stellate.engine.events import TurnEvent, TurnFinished, TurnResult
from stellate.errors import UsageError
from stellate.store import BaseStore, SessionId

if TYPE_CHECKING:
    from stellate.agent.agent import Agent

__all__ = [
    "Branched",
    "TurnMessage",
    "branch_before",
    "edit",
    "last_turn",
    "prepare_edit",
    "stream_edit",
    "turn_messages",
    "user_message_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnMessage:
    """The user message that opened one turn of a log."""

    turn: int
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Branched:
    """A branch made by an edit or a regeneration, and the result of the turn it ran."""

    session: SessionDigest
    """The new branch as it stands after its turn."""
    result: TurnResult


async def turn_start_seq(store: BaseStore, session_id: str, turn: int) -> int:
    """Seq of the ``turn/start`` of ``turn`` in a session's log (inherited turns included).

    Raises:
        NotFoundError: unknown session.
        UsageError: the log has no such turn.
    """
    record = await store.get_session(SessionId(session_id))
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= record.turn_count:
        raise UsageError(f"session {session_id} has turns 1..{record.turn_count}; choose one of them, not {turn!r}")
    # Turns are numbered in log order: a binary search over seqs finds the turn with O(log n) indexed reads,
    # so a branch costs (nearly) the same whatever the length of the history it is cut from.
    low, high = 0, record.next_seq  # the turn/start sought lies in [low, high)
    while low < high:
        middle = (low + high) // 2
        found = await store.read_events(record.id, start=middle, types=("turn/start",), limit=1)
        if found and found[0].data["turn"] == turn:  # the first turn/start from ``middle`` on is the one sought
            return found[0].seq
        if found and found[0].data["turn"] < turn:
            low = found[0].seq + 1
        else:
            high = middle
    raise UsageError(f"session {session_id} has no turn/start of turn {turn} in its log")  # pragma: no cover


async def turn_messages(store: BaseStore, session_id: str, *, from_turn: int = 1) -> list[TurnMessage]:
    """The user message of every turn from ``from_turn`` on, in order.

    Raises:
        NotFoundError: unknown session.
        UsageError: the log has no turn ``from_turn``.
    """
    start = await turn_start_seq(store, session_id, from_turn)
    events = await store.read_events(SessionId(session_id), start=start, types=("turn/start", "user/message"))
    messages: list[TurnMessage] = []
    turn: int | None = None
    for event in events:
        if event.type == "turn/start":
            turn = event.data["turn"]
        elif turn is not None:  # the first user message of a turn opened it
            messages.append(TurnMessage(turn=turn, content=event.data["content"]))
            turn = None
    return messages


async def user_message_of(store: BaseStore, session_id: str, turn: int) -> str:
    """The user message that opened ``turn``.

    Raises:
        UsageError: no such turn, or a turn without a user message.
    """
    start = await turn_start_seq(store, session_id, turn)
    found = await store.read_events(SessionId(session_id), start=start, types=("turn/start", "user/message"), limit=2)
    if len(found) < 2 or found[1].type != "user/message":
        raise UsageError(f"turn {turn} of session {session_id} has no user message to run again")
    return str(found[1].data["content"])


async def branch_before(
    agent: Agent,
    session_id: str,
    turn: int,
    *,
    label: str,
    llm: str | None = None,
    system_prompt: str | None = None,
    profile: str | None = None,
) -> SessionDigest:
    """Fork ``session_id`` just before ``turn`` (by reference), beside it on the map.

    Args:
        agent: The agent that forks.
        session_id: The session whose turn runs again.
        turn: The turn (1-based, inherited turns included) that the branch leaves out.
        label: The branch's label.
        llm: A registered adapter name for the branch (default: the source's model).
        system_prompt: The branch's system prompt (default: merged as for any fork).
        profile: A fork profile for the branch.

    Raises:
        UsageError: no such turn.
        ForkError, ArchivedError, NotFoundError: as `Agent.fork_session`.
    """
    store = await agent.store()
    boundary = await turn_start_seq(store, session_id, turn) - 1
    record = await store.get_session(SessionId(session_id))
    options = ForkOptions(
        label=label,
        context="inherit",
        boundary=boundary,
        topology_parent_id=record.parent_id or record.id,
        llm=llm,
        system_prompt=system_prompt,
        profile=profile,
    )
    return await agent.fork_session(session_id, options)


async def prepare_edit(
    agent: Agent, session_id: str, turn: int, content: str | None, *, label: str | None = None
) -> tuple[SessionDigest, str]:
    """Make the branch of an edit (``content``) or a regeneration (None) and return it with the message to run.

    Raises:
        UsageError: no such turn, or an empty message.
        ForkError, ArchivedError: as `Agent.fork_session`.
    """
    store = await agent.store()
    source_label = (await store.get_session(SessionId(session_id))).label
    if content is None:
        content = await user_message_of(store, session_id, turn)
        label = label or f"{source_label} · regenerate {turn}"
    elif not content.strip():
        raise UsageError("an edited message needs some text")
    branch = await branch_before(agent, session_id, turn, label=label or f"{source_label} · edit {turn}")
    return branch, content


async def stream_edit(
    agent: Agent, session_id: str, turn: int, content: str | None, *, label: str | None = None
) -> AsyncIterator[TurnEvent]:
    """Branch before ``turn`` and run it there with ``content`` (None: the turn's own message, a regeneration).

    The events are those of `Agent.stream`, their ``session_id`` the new branch's.
    """
    branch, content = await prepare_edit(agent, session_id, turn, content, label=label)
    async for event in agent.stream(branch.id, content):
        yield event


async def edit(agent: Agent, session_id: str, turn: int, content: str | None, *, label: str | None) -> Branched:
    """`stream_edit` to its end: the branch and the result of its turn."""
    result: TurnResult | None = None
    async for event in stream_edit(agent, session_id, turn, content, label=label):
        if isinstance(event, TurnFinished):
            result = event.result
    assert result is not None  # a turn always ends with TurnFinished or raises
    return Branched(session=await agent.get_session_digest(result.session_id), result=result)


async def last_turn(agent: Agent, session_id: str) -> int:
    """The session's last turn (the one a regeneration runs again by default).

    Raises:
        UsageError: the session has no turn yet.
    """
    record = await (await agent.store()).get_session(SessionId(session_id))
    if record.turn_count == 0:
        raise UsageError(f"session {session_id} has no turn to regenerate yet")
    return record.turn_count
