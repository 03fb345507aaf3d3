"""The space's agent events: live over SSE (resumable by ``Last-Event-ID``), and the recent ones as pages."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Header, Query
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from stellate.server.event_stream import EventStream
from stellate.server.history_stream import RESET_EVENT, history_of, tail_history
from stellate.server.models import HistoryEventOut, HistoryPageOut
from stellate.server.problems import problem_responses
from stellate.server.state import CallerDep, caller

__all__ = ["router"]

router = APIRouter(tags=["space"])
_EVENTS = "/events"

_TYPES = Query(max_length=500, description="comma-separated event types")
_MAX_ID = 2**63 - 1  # history ids are 64-bit integers in every store: a larger one is a 422, not a 500


def _types(types: str | None) -> list[str] | None:
    return [t.strip() for t in types.split(",") if t.strip()] if types else None


@router.get(
    _EVENTS,
    responses={
        **problem_responses(503),
        200: {
            "description": "Server-sent events of the space: `event:` is the agent event's type (session_created, "
            "session_forked, session_archived, turn_finished, memory_updated, insight_updated, error, ...) and `id:` "
            "its id in the space's event history (text chunks, which are not kept, have none). Reconnect with "
            f"`Last-Event-ID` to resume after the last event seen; a `{RESET_EVENT}` event says events were missed "
            "(older than the history): reload what you show.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
)
async def stream_agent_events(
    caller: CallerDep,
    types: Annotated[str | None, _TYPES] = None,
    after: Annotated[
        int | None, Query(ge=0, le=_MAX_ID, description="start after this history id (Last-Event-ID wins)")
    ] = None,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> EventStream:
    """The space's agent events from now on (or after a history id)."""
    if last_event_id is not None and last_event_id.strip().isdigit() and int(last_event_id) <= _MAX_ID:
        after = int(last_event_id)
    history_of(await caller.agent.store())  # a problem before the stream starts
    return EventStream(tail_history(caller.agent, after, _types(types)))


_DOCUMENTED = router.routes[-1]


class _HeldEvents:
    """``GET /events`` without FastAPI's per-request machinery, which an open stream would hold (issue 22).

    The route above documents the stream and answers every request this one does not take as it always did
    (a parameter it would refuse; HEAD, refused by the method): this one takes the plain ones, with the same
    meaning. Problems (no key, no event history) go to the app's exception handlers as the route's do.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the stream (ASGI)."""
        if scope["method"] != "GET":
            await _DOCUMENTED.handle(scope, receive, send)  # its methods refuse it (405)
            return
        request = Request(scope)
        query, last_event_id = request.query_params, request.headers.get("last-event-id")
        types, after = query.get("types"), query.get("after")
        plain = (
            (types is None or len(types) <= 500)
            and (after is None or (after.isascii() and after.isdigit() and int(after) <= _MAX_ID))
            and (last_event_id is None or len(last_event_id) <= 20)
        )
        if not plain:
            await _DOCUMENTED.handle(scope, receive, send)
            return
        start = None if after is None else int(after)
        response = await stream_agent_events(await caller(request), types, start, last_event_id)
        del request, query
        await response(scope, receive, send)


router.routes.insert(len(router.routes) - 1, Route(_EVENTS, _HeldEvents(), include_in_schema=False))  # matched first


@router.get("/events/history", response_model=HistoryPageOut, responses=problem_responses(503))
async def list_agent_events(
    caller: CallerDep,
    after: Annotated[
        int | None, Query(ge=0, le=_MAX_ID, description="only events with a greater id, oldest first")
    ] = None,
    before: Annotated[int | None, Query(ge=1, le=_MAX_ID, description="only events with a smaller id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    types: Annotated[str | None, _TYPES] = None,
) -> HistoryPageOut:
    """The space's recent agent events: after ``after`` (oldest first), else the newest ``limit`` of them."""
    history = history_of(await caller.agent.store())
    page = await history.read_history(after=after, before=before, limit=limit, kinds=_types(types))
    events = [HistoryEventOut(id=e.id, type=e.kind, time=e.time, data=json.loads(e.data)) for e in page.entries]
    last_seen = events[-1].id if events else after
    more = after is not None and len(events) == limit and last_seen is not None and last_seen < page.last_id
    return HistoryPageOut(events=events, last_id=page.last_id, next_after=last_seen if more else None)
