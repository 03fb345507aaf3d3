"""Erasing for real over HTTP: a session or its subtree, the whole space, a prune; plans and tombstones.

Every erase is recorded as one ``session_erased`` event per erased session on ``/v1/events``, so other clients
(the star map) drop the nodes as they go. The tombstones name the API key that erased (``local`` without keys).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from stellate.errors import UsageError
from stellate.server.models import ErasePlanOut, PruneBody, TombstoneOut
from stellate.server.problems import problem_responses
from stellate.server.state import Caller, CallerDep
from stellate.store.erasure import ErasePlan

__all__ = ["router"]

router = APIRouter(tags=["erasure"])

SubtreeQuery = Annotated[bool, Query(description="the session's topology descendants too")]
DependentsQuery = Annotated[
    Literal["cascade", "keep"] | None,
    Query(description="sessions forked from an erased one: erase them too, or give them their own copy"),
]
WaitQuery = Annotated[
    float | None, Query(ge=0, le=60, description="seconds to wait for a running turn (default: the server's)")
]


def _out(plan: ErasePlan) -> ErasePlanOut:
    return ErasePlanOut(erased=list(plan.erased), kept=list(plan.kept), scrubbed=plan.scrubbed)


def _by(caller: Caller) -> str:
    return caller.principal.key_id or "local"


@router.get("/sessions/{session_id}/erase-plan", response_model=ErasePlanOut, responses=problem_responses(404, 409))
async def plan_erase(
    session_id: str, caller: CallerDep, subtree: SubtreeQuery = False, dependents: DependentsQuery = None
) -> ErasePlanOut:
    """What deleting the session would erase and keep, erasing nothing (``has_dependents`` without a choice)."""
    return _out(await caller.agent.plan_erase(session_id, subtree=subtree, dependents=dependents))


@router.delete("/sessions/{session_id}", response_model=ErasePlanOut, responses=problem_responses(404, 409))
async def erase_session(
    session_id: str,
    caller: CallerDep,
    subtree: SubtreeQuery = False,
    dependents: DependentsQuery = None,
    wait: WaitQuery = None,
) -> ErasePlanOut:
    """Erase the session (and with ``subtree`` its branches): content gone, a tombstone left.

    Answers ``has_dependents`` (409) when sessions inherit from it and no ``dependents`` choice is given, and
    ``session_busy`` (409) when a turn still runs there after ``wait`` seconds; nothing is erased then.
    """
    plan = await caller.agent.erase_session(
        session_id, subtree=subtree, dependents=dependents, busy_timeout=wait, by=_by(caller)
    )
    return _out(plan)


@router.delete("/sessions", response_model=ErasePlanOut, responses=problem_responses(409))
async def erase_space(
    caller: CallerDep,
    all: Annotated[bool, Query(description="must be true: every session of the space is erased")] = False,
    wait: WaitQuery = None,
) -> ErasePlanOut:
    """Erase every session of the caller's space (``all=true`` is required)."""
    if not all:
        raise UsageError("erasing a whole space needs ?all=true")
    return _out(await caller.agent.erase_space(busy_timeout=wait, by=_by(caller)))


@router.post("/prune", response_model=ErasePlanOut, responses=problem_responses(409))
async def prune(body: PruneBody, caller: CallerDep) -> ErasePlanOut:
    """Erase archived sessions idle for longer than ``older_than`` seconds (their live forks keep a copy)."""
    return _out(await caller.agent.prune_sessions(body.older_than, dry_run=body.dry_run, by=_by(caller)))


@router.get("/tombstones", response_model=list[TombstoneOut], responses=problem_responses())
async def list_tombstones(caller: CallerDep) -> list[TombstoneOut]:
    """What remains of the space's erased sessions, oldest erase first."""
    return [
        TombstoneOut(
            id=t.id,
            parent_id=t.parent_id,
            source_id=t.source_id,
            fork_seq=t.fork_seq,
            created_at=t.created_at,
            erased_at=t.erased_at,
            erased_by=t.erased_by,
        )
        for t in await caller.agent.list_tombstones()
    ]
