"""One reflection pass: the reflector reads every active session's digest, and its insights land in one write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stellate.agent.reflector import Reflection
from stellate.engine.events import ErrorRaised, InsightUpdated
from stellate.errors import StellateError, UsageError
from stellate.log.events import make_event
from stellate.store import SessionId

if TYPE_CHECKING:
    from stellate.agent.agent import Agent

__all__ = ["reflect"]


async def reflect(agent: Agent, synthesis_session_id: str | None) -> Reflection:
    """`Agent.reflect`: ask ``agent``'s reflector, then write the insights (and the synthesis) in one transaction.

    A failure of the reflector's model is published as an ``error`` event (source ``reflector``) and raised.

    Raises:
        UsageError: the agent has no reflector.
    """
    if agent.reflector is None:
        raise UsageError(
            "no reflector configured: pass reflector=Reflector(llm) to Agent, or run stellate serve --reflector"
        )
    store = await agent.store()
    digests = [d for d in await agent.list_session_digests() if d.status == "active"]
    current = None
    if synthesis_session_id is not None:
        current = (await agent.get_session_digest(synthesis_session_id)).memory
    try:
        reflection = await agent.reflector.reflect(digests, current_synthesis=current)
    except Exception as exc:  # raised to the caller, and shown to everyone watching the space (the Events page)
        code = exc.code if isinstance(exc, StellateError) else "reflection_failed"
        failed = ErrorRaised(session_id=None, source="reflector", code=code, message=f"{type(exc).__name__}: {exc}")
        await agent.events.publish(failed)
        raise
    batches: dict[SessionId, list[Any]] = {
        SessionId(sid): [make_event("insight/put", {"content": text})] for sid, text in reflection.insights.items()
    }
    if synthesis_session_id is not None and reflection.synthesis:
        memory = make_event("memory/put", {"content": reflection.synthesis, "source": "reflection"})
        batches.setdefault(SessionId(synthesis_session_id), []).append(memory)
    if batches:
        await store.append_batches(batches)
    for touched in batches:
        if (cached := agent._sessions.cached(touched)) is not None:  # a live copy catches up with the write
            await cached.refresh()
    for target, text in reflection.insights.items():
        await agent.events.publish(InsightUpdated(session_id=target, insight=text))
    return reflection
