"""Approvals: the tool calls waiting for a person, and the decision that resumes their paused turn."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Header

from stellate.engine.approval import PendingApproval
from stellate.server.models import ApprovalList, DecisionBody, DecisionOut, PendingApprovalOut
from stellate.server.problems import problem_responses
from stellate.server.routes.turns import stream_response
from stellate.server.state import CallerDep

__all__ = ["router"]

router = APIRouter(tags=["approvals"])

_STREAM_DOC = {
    "description": "The decision's outcome; with `Accept: text/event-stream`: `approval_decided`, then the "
    "resumed turn's events as `POST .../turns` streams them (none while other calls still wait), or a final "
    "`problem` event.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.get("/approvals", response_model=ApprovalList, responses=problem_responses())
async def list_approvals(caller: CallerDep) -> ApprovalList:
    """Every tool call of the caller's space waiting for approval (passed deadlines are decided first)."""
    return ApprovalList(items=[_out(p) for p in await caller.agent.pending_approvals()])


@router.get("/sessions/{session_id}/approvals", response_model=ApprovalList, responses=problem_responses(404))
async def session_approvals(session_id: str, caller: CallerDep) -> ApprovalList:
    """The session's tool calls waiting for approval, in call order (empty unless its turn is paused)."""
    return ApprovalList(items=[_out(p) for p in await caller.agent.pending_approvals(session_id)])


@router.post(
    "/sessions/{session_id}/approvals/{call_id}",
    response_model=DecisionOut,
    responses={**problem_responses(404, 409, 422, 503), 200: _STREAM_DOC},
)
async def decide(
    session_id: str,
    call_id: str,
    body: DecisionBody,
    caller: CallerDep,
    accept: Annotated[str, Header()] = "application/json",
) -> Any:
    """Approve (arguments as given, or edited) or deny (with a reason) one waiting call.

    The last decision of a paused turn resumes it in a task of the server, like a turn: a client that
    disconnects does not stop it. Of two decisions on one call, the second gets 409 `approval_decided`.
    """
    await caller.agent.get_session_digest(session_id)
    events = caller.agent.stream_decision(
        session_id,
        call_id,
        approve=body.decision == "approve",
        arguments=body.arguments,
        reason=body.reason,
        by=body.by,
    )
    live = caller.server.turns.start_events(caller.space, session_id, events)
    if "text/event-stream" in accept:
        return stream_response(live)
    return DecisionOut(call_id=call_id, decision=body.decision, result=await live.settled())


def _out(pending: PendingApproval) -> PendingApprovalOut:
    return PendingApprovalOut(**dataclasses.asdict(pending))
