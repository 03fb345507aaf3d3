"""Sessions: create roots, list digests, the forest, one session, and its slots."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel

from stellate.agent import SessionDigest, TopologyNode
from stellate.agent.editing import rename_session, set_system_prompt
from stellate.engine import SessionConfig
from stellate.server.models import (
    ContentBody,
    CreateSessionBody,
    LabelBody,
    Lineage,
    LineageEntry,
    MemoryOut,
    SessionDetail,
    SessionPage,
    TopologyPage,
)
from stellate.server.pagination import keyset_page, page_of
from stellate.server.problems import problem_responses
from stellate.server.state import CallerDep
from stellate.store import SessionId, SessionRecord

__all__ = ["router"]

router = APIRouter(tags=["sessions"])


@router.post(
    "/sessions", status_code=status.HTTP_201_CREATED, response_model=SessionDigest, responses=problem_responses(409)
)
async def create_session(body: CreateSessionBody, caller: CallerDep) -> SessionDigest:
    """Create a root session (a new tree of the forest)."""
    config = None
    if body.llm is not None or body.tools is not None or body.skills is not None:
        caller.agent.registries.resolve_tools(body.tools)  # an unknown name fails now, not at the first turn
        config = SessionConfig(llm=body.llm, tools=body.tools, skills=body.skills)
    return await caller.agent.create_session(
        label=body.label, system_prompt=body.system_prompt, session_id=body.session_id, config=config
    )


@router.get("/sessions", response_model=SessionPage, responses=problem_responses(404))
async def list_sessions(
    caller: CallerDep,
    root: Annotated[str | None, Query(description="only this root's tree")] = None,
    parent: Annotated[str | None, Query(description="only the children of this session")] = None,
    status: Annotated[Literal["active", "archived"] | None, Query()] = None,
    q: Annotated[str | None, Query(max_length=200, description="label contains (case-insensitive)")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Session digests in creation order, filtered, one page at a time (each page read from the store as such)."""
    needle = q.casefold() if q else None
    if root is not None:  # a tree's members are known from the tree only: the page is cut from the full listing
        tree = _ids(await caller.agent.get_node(root))

        def keep(digest: SessionDigest) -> bool:
            return (
                digest.id in tree
                and (parent is None or digest.parent_id == parent)
                and (status is None or digest.status == status)
                and (needle is None or needle in digest.label.casefold())
            )

        items, next_cursor = page_of(await caller.agent.list_session_digests(), cursor, limit, keep)
        return _json(SessionPage(items=items, next_cursor=next_cursor))

    async def fetch(after: str | None, n: int) -> list[SessionDigest]:
        return await caller.agent.list_session_digests_page(after=after, limit=n, parent_id=parent, status=status)

    labelled = None if needle is None else (lambda d: needle in d.label.casefold())
    items, next_cursor = await keyset_page(fetch, cursor, limit, labelled)
    return _json(SessionPage(items=items, next_cursor=next_cursor))


def _json(page: BaseModel) -> Response:
    """A page serialized once, by its own model (FastAPI would validate its thousands of items again first)."""
    return Response(content=page.model_dump_json(), media_type="application/json")


def _ids(node: TopologyNode) -> set[str]:
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        found.add(current.id)
        stack.extend(current.children)
    return found


@router.get("/forest", response_model=list[TopologyNode], responses=problem_responses())
async def get_topology(caller: CallerDep) -> list[TopologyNode]:
    """The forest: roots in creation order, each with its subtree.

    ``parent_id`` is the topology parent (where a node hangs), ``source_id`` where its history came from.
    """
    return await caller.agent.get_topology()


@router.get("/forest/nodes", response_model=TopologyPage, responses=problem_responses())
async def get_topology_page(
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """The forest one page at a time: nodes in creation order, without children (a parent comes before them).

    Each node's ``parent_id`` says where it hangs, so a client builds the forest as the pages arrive (the star
    map draws from the first page on); ``depth`` is left 0 and ``children`` empty.
    """

    async def fetch(after: str | None, n: int) -> list[TopologyNode]:
        return await caller.agent.get_topology_page(after=after, limit=n)

    items, next_cursor = await keyset_page(fetch, cursor, limit)
    return _json(TopologyPage(items=items, next_cursor=next_cursor))


@router.get("/sessions/{session_id}", response_model=SessionDetail, responses=problem_responses(404))
async def get_session(session_id: str, caller: CallerDep) -> SessionDetail:
    """One session: digest, configuration as stored, slots, pending insight, turn count, open turn."""
    record = await (await caller.agent.store()).get_session(SessionId(session_id))
    slots = record.slots
    return SessionDetail(
        id=record.id,
        label=slots.label,
        status=slots.status,
        parent_id=record.parent_id,
        source_id=record.source_id,
        fork_seq=record.fork_seq,
        inherited=record.inherited,
        created_at=record.created_at,
        last_activity=slots.last_activity,
        turn_count=record.turn_count,
        next_seq=record.next_seq,
        open_turn=record.cursor.turn_open,
        running=caller.server.turns.current(caller.space, record.id) is not None,
        awaiting_approval=len(record.cursor.awaiting),
        system_prompt=slots.system_prompt,
        memory=slots.memory,
        insight=slots.insight,
        config=dict(slots.config),
        inherited_turns=record.inherited_turns,
    )


@router.get("/sessions/{session_id}/lineage", response_model=Lineage, responses=problem_responses(404))
async def get_lineage(session_id: str, caller: CallerDep) -> Lineage:
    """The session's ancestors (with the seq each fork was taken at) and its descendants."""
    store = await caller.agent.store()
    record = await store.get_session(SessionId(session_id))
    return Lineage(
        session=_entry(record),
        ancestors=[_entry(r) for r in await store.ancestors(record.id)],
        descendants=await caller.agent.get_node(record.id),
    )


def _entry(record: SessionRecord) -> LineageEntry:
    return LineageEntry(
        id=record.id,
        label=record.label,
        status=record.status,
        parent_id=record.parent_id,
        source_id=record.source_id,
        fork_seq=record.fork_seq,
    )


@router.patch("/sessions/{session_id}", response_model=SessionDigest, responses=problem_responses(404, 409))
async def rename(session_id: str, body: LabelBody, caller: CallerDep) -> SessionDigest:
    """Rename a session (its identity line follows from the next model call)."""
    await rename_session(caller.agent, session_id, body.label)
    return await caller.agent.get_session_digest(session_id)


@router.post("/sessions/{session_id}/archive", response_model=SessionDigest, responses=problem_responses(404, 409))
async def archive_session(session_id: str, caller: CallerDep) -> SessionDigest:
    """Make a session read-only (its memory is consolidated first when configured)."""
    await caller.agent.archive_session(session_id)
    return await caller.agent.get_session_digest(session_id)


@router.put("/sessions/{session_id}/insight", response_model=SessionDigest, responses=problem_responses(404, 409))
async def put_insight(session_id: str, body: ContentBody, caller: CallerDep) -> SessionDigest:
    """Replace the pending insight; the next successful model call consumes it."""
    await caller.agent.put_insight(session_id, body.content)
    return await caller.agent.get_session_digest(session_id)


@router.delete("/sessions/{session_id}/insight", response_model=SessionDigest, responses=problem_responses(404, 409))
async def clear_insight(session_id: str, caller: CallerDep) -> SessionDigest:
    """Drop the pending insight unread."""
    await caller.agent.clear_insight(session_id)
    return await caller.agent.get_session_digest(session_id)


@router.put("/sessions/{session_id}/system_prompt", response_model=SessionDetail, responses=problem_responses(404, 409))
async def put_system_prompt(session_id: str, body: ContentBody, caller: CallerDep) -> SessionDetail:
    """Replace the system prompt from the session's next model call on."""
    await set_system_prompt(caller.agent, session_id, body.content)
    return await get_session(session_id, caller)


@router.put("/sessions/{session_id}/memory", response_model=SessionDigest, responses=problem_responses(404, 409))
async def put_memory(session_id: str, body: ContentBody, caller: CallerDep) -> SessionDigest:
    """Replace the memory (read by reflection, never by the session's own model)."""
    await caller.agent.put_memory(session_id, body.content)
    return await caller.agent.get_session_digest(session_id)


@router.post("/sessions/{session_id}/consolidate", response_model=MemoryOut, responses=problem_responses(404, 409, 503))
async def consolidate_session(session_id: str, caller: CallerDep) -> MemoryOut:
    """Consolidate the history into the memory now."""
    memory = await caller.agent.consolidate_session(session_id)
    return MemoryOut(session_id=session_id, memory=memory)
