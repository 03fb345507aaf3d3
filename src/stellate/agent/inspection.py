"""Looking back at a session: the exact context of a past model call, rebuilt from the log alone."""

from __future__ import annotations

from dataclasses import dataclass

from stellate.agent.agent import Agent
from stellate.errors import UsageError
from stellate.llm.types import ToolSpec
from stellate.log.messages import Message
from stellate.session.context import build_context
from stellate.session.history import History
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

    Raises:
        NotFoundError: unknown session.
        UsageError: ``step`` is not an assistant message made by a model call, or no call was made yet.
    """
    session = await agent._session(session_id)
    store = session.store
    if step is None:
        step = await _last_call(agent, session_id)
    found = await store.read_events(session.id, start=step, stop=step + 1) if step >= 0 else []
    if not found or found[0].type != "assistant/message":
        raise UsageError(f"seq {step} of session {session_id} is not an assistant message")
    past = History(inherited=session.record.inherited)
    past.absorb(await store.read_events(session.id, stop=step))
    if not past.cursor.step_open:
        raise UsageError(f"seq {step} was not produced by a model call (it stands outside a step)")
    return CallContext(
        session_id=session.id,
        step=step,
        system_prompt=past.slots.system_prompt,
        insight=past.slots.insight,
        messages=build_context(past, session.runtime.language),
        tools=(await agent._tools_for(session)).specs(),
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
