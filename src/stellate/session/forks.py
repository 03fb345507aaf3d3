"""How a session's log begins: its opening events, the messages a fork copies, the source point it inherits.

Helpers of `Session.create` and `Session.fork_record`. The store judges the fork point against the rules of
DESIGN.md §2 (an explicit boundary is never adjusted); this module only says which point was asked for.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from stellate.errors import ForkError, NotFoundError
from stellate.log.events import NewEvent, make_event
from stellate.log.invariants import Cursor
from stellate.log.messages import Message, message_to_json
from stellate.log.transcript import sanitize_messages
from stellate.session.types import ContextFn
from stellate.store.base import BaseStore
from stellate.store.types import Anchor, Boundary, CompletedTurn, ForkRequest, SessionId

__all__ = ["copied_context", "inherit_request", "opening_events", "refuse_existing"]


def opening_events(label: str, system_prompt: str | None, config: dict[str, object] | None) -> list[NewEvent]:
    """The first events of a new session: its creation, then its system prompt and frozen config when given."""
    events = [make_event("session/created", {"label": label})]
    if system_prompt:
        events.append(make_event("system_prompt/set", {"content": system_prompt}))
    if config:
        events.append(make_event("config/frozen", {"config": dict(config)}))
    return events


def inherit_request(
    source_id: SessionId, cursor: Cursor, *, at_seq: int | None, boundary: int | None
) -> ForkRequest | None:
    """The point of the source a fork with ``context="inherit"`` reads by reference.

    Args:
        source_id: The session forked from.
        cursor: The source's cursor as this writer sees it.
        at_seq: An anchor (a clicked message): the store forks at the turn holding it.
        boundary: An exact, inclusive seq.

    Returns:
        The request for the store: the exact boundary or anchor when given; else the source as stored (its
        whole log, or up to its last completed turn while a turn runs there, whichever writer runs it). None
        when the source's log is empty.
    """
    if boundary is not None:
        return ForkRequest(source_id=source_id, point=Boundary(seq=boundary))
    if at_seq is not None:
        return ForkRequest(source_id=source_id, point=Anchor(at_seq=at_seq))
    if cursor.next_seq == 0:
        return None
    # Judged by the store on the log as committed: this writer's cursor may lag behind another's turn.
    return ForkRequest(source_id=source_id, point=CompletedTurn())


async def copied_context(select: ContextFn, messages: Sequence[Message]) -> NewEvent | None:
    """The ``context/imported`` event holding the messages ``select`` picks (made valid), or None if none."""
    selected = select(messages)
    chosen = await selected if inspect.isawaitable(selected) else selected
    copied = sanitize_messages(list(chosen))
    if not copied:
        return None
    return make_event("context/imported", {"messages": [message_to_json(m) for m in copied]})


async def refuse_existing(store: BaseStore, session_id: SessionId) -> None:
    """Refuse a child id that is taken, before anything is written.

    Raises:
        ForkError: ``child_exists``.
    """
    try:
        await store.get_session(session_id)
    except NotFoundError:
        return
    raise ForkError(f"a session {session_id!r} already exists", code="child_exists", session_id=session_id)
