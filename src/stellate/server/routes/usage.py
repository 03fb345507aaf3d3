"""What a session's model calls cost, and the context window of a past call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from stellate.server.models import MAX_SEQ
from stellate.server.problems import problem_responses
from stellate.server.state import CallerDep
from stellate.server.usage_models import ContextWindowOut, UsageReportOut

__all__ = ["router"]

router = APIRouter(tags=["usage"])


@router.get("/sessions/{session_id}/usage", response_model=UsageReportOut, responses=problem_responses(404))
async def get_usage(session_id: str, caller: CallerDep) -> UsageReportOut:
    """What each model call of the session cost, with per-turn and session totals.

    Each call has its tokens, latency, time to first token, stop reason and cost; the session's own total is kept
    apart from what a fork inherited. Unknown values are null, never 0.
    """
    report = await caller.agent.usage_report(session_id)
    return UsageReportOut.of(report, priced=bool(caller.agent.prices))


@router.get("/sessions/{session_id}/context-window", response_model=ContextWindowOut, responses=problem_responses(404))
async def get_context_window(
    session_id: str,
    caller: CallerDep,
    reply_seq: Annotated[
        int | None, Query(ge=0, le=MAX_SEQ, description="seq of the assistant message of that call")
    ] = None,
) -> ContextWindowOut:
    """How a past call's context filled the model's window (default: the latest call).

    The tokens of each part (system prompt, identity, insight, summary, history, tool definitions), rebuilt from the
    log, against the model's window and the compression threshold.
    """
    return ContextWindowOut.of(await caller.agent.context_window(session_id, reply_seq))
