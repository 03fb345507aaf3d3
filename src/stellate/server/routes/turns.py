"""Turns: run one (JSON result, or every event over SSE), and cancel the running one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query

from stellate.engine.events import TurnResult
from stellate.server.event_stream import EventStream
from stellate.server.models import RunningTurns, TurnBody, TurnCancelled
from stellate.server.problems import problem_responses
from stellate.server.routes.blobs import turn_images
from stellate.server.state import CallerDep
from stellate.server.turn_stream import TurnSource
from stellate.server.turns import LiveTurn

__all__ = ["router", "stream_response"]

router = APIRouter(tags=["turns"])

_STREAM_DOC = {
    "description": "The turn's result; with `Accept: text/event-stream`: every event of the turn as it "
    "happens (`event:` is its type: message_received, round_start, text, assistant_reply, tool_call, "
    "tool_result (with duration_ms), round_end, turn_finished), or a final `problem` event.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.post(
    "/sessions/{session_id}/turns",
    response_model=TurnResult,
    responses={**problem_responses(404, 409, 413, 503), 200: _STREAM_DOC},
)
async def turn(
    session_id: str,
    body: TurnBody,
    caller: CallerDep,
    accept: Annotated[str, Header()] = "application/json",
    wait: Annotated[bool, Query(description="wait for a running turn to end instead of 409 session_busy")] = False,
) -> Any:
    """Run one turn: the model, and the tools it calls, until it answers.

    The turn runs in a task of the server: a client that disconnects does not stop it (it completes and is
    in the log); `POST .../turns/current/cancel` does.
    """
    images = await turn_images(caller, body.images)
    live = await caller.server.turns.start(
        caller.space, caller.agent, session_id, body.content, wait=wait, images=images
    )
    if "text/event-stream" in accept:
        return stream_response(live)
    return await live.outcome()


def stream_response(live: LiveTurn) -> EventStream:
    """The events of ``live`` as SSE (``event:`` is each one's type), then a ``problem`` event if it failed."""
    return EventStream(TurnSource(live))


@router.post(
    "/sessions/{session_id}/turns/current/cancel", response_model=TurnCancelled, responses=problem_responses(404)
)
async def cancel_turn(session_id: str, caller: CallerDep) -> TurnCancelled:
    """Abort the session's running turn; it records `turn/end {aborted}`. ``cancelled`` is false when none runs."""
    await caller.agent.get_session_digest(session_id)
    return TurnCancelled(cancelled=caller.server.turns.cancel(caller.space, session_id))


@router.get("/turns", response_model=RunningTurns, responses=problem_responses())
async def running_turns(caller: CallerDep) -> RunningTurns:
    """Sessions of the caller's space running a turn on this server now (for a busy marker)."""
    return RunningTurns(session_ids=[live.session_id for live in caller.server.turns.running(caller.space)])
