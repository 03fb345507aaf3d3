"""Forks: a child session from a source, at an explicit boundary or at a clicked message (anchor)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

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
async def fork_session(
    session_id: str,
    body: ForkBody,
    caller: CallerDep,
    wait: Annotated[
        bool, Query(description="wait for a turn running on the source to end first, so the child holds it")
    ] = False,
) -> SessionDigest:
    """Fork a child.

    With ``boundary`` the child inherits exactly events ``0..boundary`` (422 ``invalid_boundary`` when it is
    not a seq of the source, 409 ``open_turn`` inside a turn). With ``at_seq`` it inherits up to the first
    ``turn/end`` at or after that seq (409 ``fork_unavailable`` while that turn is still open). With neither
    and ``context: inherit``, up to the last completed turn. A turn running on the source (on this server,
    another worker or another process) never delays the fork: the child is cut at a completed turn and the
    running turn goes on untouched. With ``wait`` the fork first waits (up to the server's busy timeout, then
    409 ``session_busy``) for that turn to end, so the child holds the newest turn.
    """
    caller.agent.registries.resolve_tools(body.tools)  # an unknown name fails now, not at the child's first turn
    wait_for_turn = caller.agent.busy_timeout if wait else None
    return await caller.agent.fork_session(session_id, body.options(), wait_for_turn=wait_for_turn)
