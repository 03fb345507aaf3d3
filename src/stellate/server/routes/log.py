"""A session's log: its events (a page, or a live tail), its transcript, and the context of a past call."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query

from stellate.agent.inspection import context_at
from stellate.log.messages import message_to_json
from stellate.server.event_stream import EventStream
from stellate.server.models import MAX_SEQ, CallContext, EventOut, EventPage, MessageOut
from stellate.server.problems import problem_responses
from stellate.server.sse import tail_session
from stellate.server.state import CallerDep
from stellate.store import SessionId

__all__ = ["router"]

router = APIRouter(tags=["log"])


@router.get("/sessions/{session_id}/events", response_model=EventPage, responses=problem_responses(404))
async def list_events(
    session_id: str,
    caller: CallerDep,
    after: Annotated[int, Query(ge=-1, le=MAX_SEQ, description="only events with a greater seq")] = -1,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    types: Annotated[str | None, Query(max_length=500, description="comma-separated event types")] = None,
) -> EventPage:
    """The session's events in seq order; those read from the fork source are marked ``inherited``."""
    store = await caller.agent.store()
    record = await store.get_session(SessionId(session_id))
    wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
    events = await store.read_events(record.id, start=after + 1, limit=limit, types=wanted)
    return EventPage(
        events=[
            EventOut(seq=e.seq, type=e.type, time=e.time, data=e.data, inherited=e.seq < record.inherited)
            for e in events
        ],
        next_seq=record.next_seq,
        inherited=record.inherited,
    )


@router.get(
    "/sessions/{session_id}/events/stream",
    responses={
        **problem_responses(404),
        200: {
            "description": "Server-sent events: one `log` event per log event (`id` is its seq), new ones as "
            "they are written. Reconnect with `Last-Event-ID` to resume after the last one seen.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def stream_events(
    session_id: str,
    caller: CallerDep,
    after: Annotated[int, Query(ge=-1, le=MAX_SEQ, description="start after this seq (Last-Event-ID wins)")] = -1,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> EventStream:
    """Tail the session's log."""
    if last_event_id is not None and last_event_id.strip().lstrip("-").isdigit():
        after = max(int(last_event_id), -1)
    await caller.agent.get_session_digest(session_id)  # a 404 before the stream starts
    return EventStream(tail_session(caller.agent, session_id, after))


@router.get(
    "/sessions/{session_id}/transcript",
    response_model=list[MessageOut],
    response_model_exclude_none=True,
    responses=problem_responses(404),
)
async def list_messages(session_id: str, caller: CallerDep) -> list[MessageOut]:
    """The transcript as the session's model sees it (a compaction summary first, when there is one)."""
    return [_message(m) for m in await caller.agent.list_messages(session_id)]


@router.get(
    "/sessions/{session_id}/context",
    response_model=CallContext,
    response_model_exclude_unset=True,  # system_prompt and insight always, null or not; messages as the transcript
    responses=problem_responses(404),
)
async def get_context(
    session_id: str,
    caller: CallerDep,
    step: Annotated[
        int | None, Query(ge=0, le=MAX_SEQ, description="seq of the assistant message of that call")
    ] = None,
) -> CallContext:
    """The exact context of a past model call, rebuilt from the log (default: the latest call)."""
    found = await context_at(caller.agent, session_id, step)
    return CallContext(
        session_id=found.session_id,
        step=found.step,
        system_prompt=found.system_prompt,
        insight=found.insight,
        messages=[_message(m) for m in found.messages],
        tools=[{"name": t.name, "description": t.description, "parameters": t.parameters} for t in found.tools],
    )


def _message(message: Any) -> MessageOut:
    return MessageOut.model_validate(message_to_json(message))
