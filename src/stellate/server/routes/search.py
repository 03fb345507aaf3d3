"""Search: the messages of the caller's space whose text contains every term of a query."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Query

from stellate.server.models import SearchHitOut, SearchPageOut
from stellate.server.problems import problem_responses
from stellate.server.state import CallerDep
from stellate.store.search import MAX_LIMIT

__all__ = ["router"]

router = APIRouter(tags=["search"])


@router.get("/search", response_model=SearchPageOut, responses=problem_responses())
async def search_messages(
    caller: CallerDep,
    q: Annotated[str, Query(min_length=1, max_length=200, description="terms separated by spaces; all must occur")],
    archived: Annotated[bool, Query(description="search archived sessions too")] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 20,
    offset: Annotated[int, Query(ge=0, description="the next_offset of the previous page")] = 0,
) -> SearchPageOut:
    """User and assistant messages containing every term of ``q`` (any case), best first, one page at a time.

    A message inherited by forks is listed once, at the session that holds it.
    """
    page = await caller.agent.search(q, include_archived=archived, limit=limit, offset=offset)
    return SearchPageOut(hits=[SearchHitOut(**asdict(h)) for h in page.hits], next_offset=page.next_offset)
