"""Forks: a child session from a source, at an explicit boundary or at a clicked message (anchor)."""

from __future__ import annotations

from fastapi import APIRouter, status

from stellate.agent import SessionDigest
from stellate.server.models import ForkBody
from stellate.server.problems import problem_responses
from stellate.server.state import CallerDep

__all__ = ["router"]

router = APIRouter(tags=["forks"])


@router.post(
    "/sessions/{session_id}/forks",
    status_code=status.HTTP_201_CREATED,
    response_model=SessionDigest,
    responses=problem_responses(404, 409, 503),
)
async def fork_session(session_id: str, body: ForkBody, caller: CallerDep) -> SessionDigest:
    """Fork a child.

    With ``boundary`` the child inherits exactly events ``0..boundary`` (422 ``invalid_boundary`` when it is
    not a seq of the source, 409 ``open_turn`` inside a turn). With ``at_seq`` it inherits up to the first
    ``turn/end`` at or after that seq (409 ``fork_unavailable`` while that turn is still open). With neither
    and ``context: inherit``, up to the last completed turn.
    """
    return await caller.agent.fork_session(session_id, body.options())
