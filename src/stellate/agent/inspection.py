"""Looking back at a session: the exact context of a past model call, rebuilt from the log alone."""

from __future__ import annotations

from dataclasses import dataclass

from stellate.agent.agent import Agent
from stellate.errors import UsageError
from stellate.llm.types import ToolSpec
from stellate.log.messages import Message
from stellate.session.context import build_context
from stellate.session.history import load_history_at
from stellate.store import SessionId

__all__ = ["CallContext", "context_at"]

_LOOKBACK = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContext:
    """What one model call was sent."""

    session_id: str
    step: int
    """Seq of the assistant message the call produced."""
    system_prompt: str | None
    insight: str | None
    """The pending insight the call consumed, if any."""
    messages: list[Message]
    """Every message sent, in order (system prompt, identity, insight, summary, history)."""
    tools: list[ToolSpec]
    """The tools the session offers (as configured now: tool definitions are not part of the log)."""


async def context_at(agent: Agent, session_id: str, step: int | None = None) -> CallContext:
    """The context of the model call that produced the assistant message at seq ``step`` (default: the last call).

    It reads only what that call needs (issue 22, goal 6): the session's record, the stored fold segments up to
    ``step`` and the events after the last of them, never the log past ``step`` nor the session opened whole.

    Raises:
        NotFoundError: unknown session.
        UsageError: ``step`` is not an assistant message made by a model call, or no call was made yet.
    """
    store = await agent.store()
    record = await store.get_session(SessionId(session_id))
    if step is None:
        step = await _last_call(agent, session_id)
    past, reply = await load_history_at(store, record, step) if 0 <= step < record.next_seq else (None, None)
    if past is None or reply is None or reply.type != "assistant/message":
        raise UsageError(f"seq {step} of session {session_id} is not an assistant message")
    if not past.cursor.step_open:
        raise UsageError(f"seq {step} was not produced by a model call (it stands outside a step)")
    return CallContext(
        session_id=record.id,
        step=step,
        system_prompt=past.slots.system_prompt,
        insight=past.slots.insight,
        messages=build_context(past, agent.language),
        tools=(await agent._tools_of(agent._sessions.config_of_record(record))).specs(),
    )


async def _last_call(agent: Agent, session_id: str) -> int:
    store = await agent.store()
    replies = await store.read_events(
        SessionId(session_id), types=("assistant/message",), reverse=True, limit=_LOOKBACK
    )
    # An opening message written by a fork is no model call: it carries no provider.
    made = next((reply.seq for reply in replies if "provider" in reply.data), None)
    if made is None:
        raise UsageError(f"session {session_id} has made no model call yet")
    return made
