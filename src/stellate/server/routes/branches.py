"""Branching again: edit or regenerate a past turn, replay a branch with other settings, compare two sessions.

Edit, regenerate and replay make a new branch cut just before a turn (by reference) and run turns there as
``POST .../turns`` does: in tasks of the server, streamed over SSE when asked (``Accept: text/event-stream``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query

from stellate.agent import SessionDigest
from stellate.agent.branching import Branched, last_turn, prepare_edit
from stellate.agent.comparison import Comparison
from stellate.agent.replay import Replay, ReplaySettings, ReplayTurn, start_replay
from stellate.engine.events import TurnResult
from stellate.server.branch_models import EditBody, RegenerateBody, ReplayBody
from stellate.server.event_stream import EventStream, ServerSentEvent
from stellate.server.problems import problem_of, problem_responses
from stellate.server.sse import json_text
from stellate.server.state import Caller, CallerDep
from stellate.server.turns import LiveTurn

__all__ = ["router"]

router = APIRouter(tags=["branches"])

_EDIT_STREAM = {
    "description": "The branch and its turn's result; with `Accept: text/event-stream`: a `branch` event (the "
    "new session's digest), then the turn's events as `POST .../turns` streams them, or a final `problem`.",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}
_REPLAY_STREAM = {
    "description": "The replay's branch and each turn's result; with `Accept: text/event-stream`: a `branch` "
    "event, then per turn a `replay_turn` event (index, total, source_turn, content) followed by that turn's "
    "events, and a final `replay_finished` (or `problem`).",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


@router.post(
    "/sessions/{session_id}/edit", response_model=Branched, responses={**problem_responses(404, 409), 200: _EDIT_STREAM}
)
async def edit_turn(
    session_id: str, body: EditBody, caller: CallerDep, accept: Annotated[str, Header()] = "application/json"
) -> Any:
    """Run turn ``turn`` again with a new message, in a new branch beside the session (the session stays)."""
    branch, content = await prepare_edit(caller.agent, session_id, body.turn, body.content, label=body.label)
    return await _run_branch(caller, branch, content, accept)


@router.post(
    "/sessions/{session_id}/regenerate",
    response_model=Branched,
    responses={**problem_responses(404, 409), 200: _EDIT_STREAM},
)
async def regenerate_turn(
    session_id: str, body: RegenerateBody, caller: CallerDep, accept: Annotated[str, Header()] = "application/json"
) -> Any:
    """Run a turn (default: the last) again with its own message, in a new branch beside the session."""
    turn = body.turn if body.turn is not None else await last_turn(caller.agent, session_id)
    branch, content = await prepare_edit(caller.agent, session_id, turn, None, label=body.label)
    return await _run_branch(caller, branch, content, accept)


async def _run_branch(caller: Caller, branch: SessionDigest, content: str, accept: str) -> Any:
    live = await caller.server.turns.start(caller.space, caller.agent, branch.id, content)
    if "text/event-stream" in accept:
        return EventStream(_edit_stream(branch, live))
    result = await live.outcome()
    return Branched(session=await caller.agent.get_session_digest(branch.id), result=result)


async def _edit_stream(branch: SessionDigest, live: LiveTurn) -> AsyncIterator[ServerSentEvent]:
    yield ServerSentEvent(data=json_text({"session": dataclasses.asdict(branch)}), event="branch", id="0")
    async for event in _turn_events(live, 0):
        yield event


async def _turn_events(live: LiveTurn, count: int) -> AsyncIterator[ServerSentEvent]:
    async for data in live.watch():
        count += 1
        yield ServerSentEvent(data=json_text(data), event=data["type"], id=str(count))
    if live.error is not None:
        yield ServerSentEvent(data=json_text(problem_of(live.error).model_dump()), event="problem", id=str(count + 1))


@router.post(
    "/sessions/{session_id}/replay",
    response_model=Replay,
    responses={**problem_responses(404, 409), 200: _REPLAY_STREAM},
)
async def replay_session(
    session_id: str, body: ReplayBody, caller: CallerDep, accept: Annotated[str, Header()] = "application/json"
) -> Any:
    """Run the session's user messages from ``from_turn`` on again, in a new branch with other settings.

    The branch takes another model, system prompt or profile; the session is only read.

    Each turn runs in a task of the server, one after the other. A streaming client that leaves stops the
    replay after the running turn, which completes; the turns done stay on the branch.
    """
    settings = ReplaySettings(llm=body.llm, system_prompt=body.system_prompt, profile=body.profile, label=body.label)
    branch, steps = await start_replay(caller.agent, session_id, body.from_turn, settings)
    if "text/event-stream" in accept:
        return EventStream(_replay_stream(caller, branch, steps))
    results: list[TurnResult] = []
    for step in steps:
        live = await caller.server.turns.start(caller.space, caller.agent, branch.id, step.content, wait=True)
        results.append(await live.outcome())
    digest = await caller.agent.get_session_digest(branch.id)
    return Replay(session=digest, source_id=session_id, from_turn=body.from_turn, results=results)


async def _replay_stream(
    caller: Caller, branch: SessionDigest, steps: list[ReplayTurn]
) -> AsyncIterator[ServerSentEvent]:
    count = 0
    yield ServerSentEvent(data=json_text({"session": dataclasses.asdict(branch)}), event="branch", id=str(count))
    results: list[dict[str, Any]] = []
    for step in steps:
        count += 1
        yield ServerSentEvent(data=json_text(dataclasses.asdict(step)), event=step.type, id=str(count))
        live = await caller.server.turns.start(caller.space, caller.agent, branch.id, step.content, wait=True)
        async for event in _turn_events(live, count):
            count += 1
            yield event
        if live.error is not None:
            return
        assert live.result is not None
        results.append(dataclasses.asdict(live.result))
    digest = await caller.agent.get_session_digest(branch.id)
    finished = {"session": dataclasses.asdict(digest), "source_id": steps[0].source_id, "results": results}
    yield ServerSentEvent(
        data=json_text({**finished, "from_turn": steps[0].source_turn}), event="replay_finished", id=str(count + 1)
    )


@router.get("/compare", response_model=Comparison, responses=problem_responses(404))
async def compare_sessions(
    caller: CallerDep,
    a: Annotated[str, Query(description="one session")],
    b: Annotated[str, Query(description="the other session")],
) -> Comparison:
    """Two sessions from their common ancestor.

    The turns both hold, then the turns after the split aligned by number, with token and latency totals per
    side and differing tool calls marked.
    """
    return await caller.agent.compare_sessions(a, b)
