"""The exact context of a session's last model call, rebuilt from its log (`Session.context_at`)."""

from __future__ import annotations

from stellate.cli.providers import UnconfiguredLLM, not_configured
from stellate.errors import UsageError
from stellate.log.messages import Message
from stellate.session import Session, SessionRuntime
from stellate.store import BaseStore, SessionId

__all__ = ["last_call_context"]

_LOOKBACK = 8


async def last_call_context(store: BaseStore, session_id: str) -> tuple[int, list[Message]] | None:
    """The seq of the session's last assistant message made by a model call, and the messages of that call.

    Returns None when no model call has been made yet (an opening message written by a fork is not one).
    """
    # Rebuilding the context reads only the log: the session is opened read-only (no repair) and with a
    # stand-in model, since nothing is sent.
    runtime = SessionRuntime(llm=UnconfiguredLLM(not_configured()))
    session = await Session.load(store, SessionId(session_id), runtime, repair=False)
    replies = await store.read_events(session.id, types=("assistant/message",), reverse=True, limit=_LOOKBACK)
    for reply in replies:
        try:
            return reply.seq, await session.context_at(reply.seq)
        except UsageError:
            continue  # written outside a step (a fork's opening message): look further back
    return None
