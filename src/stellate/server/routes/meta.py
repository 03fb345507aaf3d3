"""The space as a whole: reflection, capabilities; and the server's health and info (its events: `events`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from stellate import __version__
from stellate.agent import Agent
from stellate.agent.reflector import REFLECT_PROMPTS
from stellate.server.models import Capabilities, Health, Info, ReflectBody, ReflectionOut, ReflectorOut
from stellate.server.problems import problem_responses
from stellate.server.spaces import DEFAULT_SPACE
from stellate.server.state import CallerDep, server_state

__all__ = ["router"]

router = APIRouter()


@router.get("/health", response_model=Health, tags=["server"])
async def health() -> Health:
    """Liveness (needs no key)."""
    return Health(status="ok")


@router.get("/ready", response_model=Health, tags=["server"], responses=problem_responses(503))
async def ready(request: Request) -> Health:
    """Readiness (needs no key): the store answers. A load balancer sends traffic only to ready workers."""
    await (await server_state(request).spaces.agent(DEFAULT_SPACE).store()).ping()
    return Health(status="ok")


@router.get("/info", response_model=Info, tags=["server"], responses=problem_responses())
async def info(caller: CallerDep) -> Info:
    """The server's version and the caller's space."""
    return Info(
        version=__version__,
        api="v1",
        space=caller.space,
        auth="keys" if caller.server.keys is not None else "none",
        read_only=caller.principal.read_only,
        store=caller.server.store_name,
    )


@router.post("/reflect", response_model=ReflectionOut, tags=["space"], responses=problem_responses(404, 503))
async def reflect(caller: CallerDep, body: ReflectBody | None = None) -> ReflectionOut:
    """Run the reflector over the space's active sessions now: its synthesis and the insights it delivered."""
    target = body.synthesis_session_id if body is not None else None
    found = await caller.agent.reflect(synthesis_session_id=target)
    return ReflectionOut(synthesis=found.synthesis, insights=dict(found.insights), dropped=list(found.dropped))


@router.get("/capabilities", response_model=Capabilities, tags=["space"], responses=problem_responses())
async def capabilities(caller: CallerDep) -> Capabilities:
    """Tools, skills, profiles and named models a session may use; the schedule of consolidation."""
    agent = caller.agent
    registries = agent.registries
    return Capabilities(
        tools=[
            {"name": s.name, "description": s.description, "parameters": s.parameters} for s in registries.tools.specs()
        ],
        builtin_tools=list(registries.builtins),
        skills=[{"name": s.name, "description": s.description} for s in registries.skills],
        profiles=[_profile(name, p) for name, p in registries.profiles.items()],
        models=[{"name": name, "provider": a.provider, "model": a.model} for name, a in registries.adapters.items()],
        default_model=_default_model(agent),
        consolidate_every=agent.consolidate_every,
        consolidate_on_archive=agent.consolidate_on_archive,
        split_guard=_split_guard(agent),
        reflector=agent.reflector is not None,
        max_rounds=agent.max_rounds,
        reflection=_reflection(agent, caller.server.reflect_every),
    )


def _profile(name: str, profile: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": profile.description,
        "system_prompt_mode": profile.system_prompt_mode,
        "context": profile.context if isinstance(profile.context, str | None) else "function",
        "has_vars": profile.system_prompt_fn is not None,
    }


def _split_guard(agent: Agent) -> dict[str, int] | None:
    guard = agent.split_guard
    return None if guard is None else {"min_turns": guard.min_turns, "cooldown_turns": guard.cooldown_turns}


def _default_model(agent: Agent) -> dict[str, Any] | None:
    llm = agent.defaults.llm
    if llm is None:
        return None
    if isinstance(llm, str):
        return {"name": llm}
    return {"provider": llm.provider, "model": llm.model, "base_url": getattr(llm, "base_url", None)}


def _reflection(agent: Agent, every: float | None) -> ReflectorOut | None:
    reflector = agent.reflector
    if reflector is None:
        return None
    llm = reflector.llm
    custom = reflector.instructions not in REFLECT_PROMPTS.values()
    return ReflectorOut(
        provider=llm.provider,
        model=llm.model,
        base_url=getattr(llm, "base_url", None),
        prompt="custom" if custom else "built-in",
        every_seconds=every,
    )
