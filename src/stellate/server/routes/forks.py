"""Forks: a child session from a source, at an explicit boundary or at a clicked message (anchor)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from stellate.agent import SessionDigest
from stellate.errors import ConflictError, ForkError
from stellate.server.models import ForkBody
from stellate.server.problems import problem_responses
from stellate.server.state import Caller, CallerDep
from stellate.store import SessionId

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
    wait: Annotated[bool, Query(description="wait for a running turn to end instead of 409 session_busy")] = False,
) -> SessionDigest:
    """Fork a child.

    With ``boundary`` the child inherits exactly events ``0..boundary`` (422 ``invalid_boundary`` when it is
    not a seq of the source, 409 ``open_turn`` inside a turn). With ``at_seq`` it inherits up to the first
    ``turn/end`` at or after that seq (409 ``fork_unavailable`` while that turn is still open). With neither
    and ``context: inherit``, up to the last completed turn. While the source runs a turn on this server the
    fork would wait for it: it is refused with 409 ``session_busy`` unless ``wait`` is set.
    """
    caller.agent.registries.resolve_tools(body.tools)  # an unknown name fails now, not at the child's first turn
    if not wait and caller.server.turns.current(caller.space, session_id) is not None:
        await _refuse_while_running(caller, session_id, body)
    return await caller.agent.fork_session(session_id, body.options())


async def _refuse_while_running(caller: Caller, session_id: str, body: ForkBody) -> None:
    """The fork point's own refusal when it lies in the running turn, else ``session_busy``."""
    store = await caller.agent.store()
    record = await store.get_session(SessionId(session_id))
    if record.cursor.turn_open:
        starts = await store.read_events(record.id, types=("turn/start",), reverse=True, limit=1)
        opened = starts[0].seq if starts else 0
        if body.at_seq is not None and opened <= body.at_seq < record.next_seq:
            raise ForkError(f"anchor {body.at_seq} lies in a turn still running", code="fork_unavailable")
        if body.boundary is not None and opened <= body.boundary < record.next_seq:
            raise ForkError(f"boundary {body.boundary} lies in a turn still running", code="open_turn")
    raise ConflictError(
        f"session {session_id} is running a turn; fork when it ends, or pass wait=true",
        code="session_busy",
        session_id=session_id,
    )
