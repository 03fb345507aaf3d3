"""The study-abroad planner (seed 000's profiles), shared by ``stellate demo`` and ``examples/study_abroad.py``.

A planner session hears the goal, then splits the work: the model itself calls ``create_session`` to
open a branch per region (profile ``region-expert``, its prompt built by ``system_prompt_fn`` from
``vars``) and a budget branch (profile ``researcher``: prepends its prompt to the model's and inherits the
planner's history). Each branch answers its question, consolidates a memory, and a reflector reading
every memory sends the budget branch an insight, which its next model call consumes.

The flow works with any model: with a real one that opens no branch (or names it differently), the
missing branches are forked in code through the same path. `scripted_planner` and `scripted_reflector`
play the model offline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from stellate.agent import Agent, Reflection
from stellate.engine import ForkOptions, ForkProfile
from stellate.engine.events import TurnEvent
from stellate.llm import LLMRequest, Reply, ScriptedLLM, tool_call

__all__ = [
    "BRANCHES",
    "ROOT_LABEL",
    "Branch",
    "Narrator",
    "Trip",
    "plan_trip",
    "region_expert_prompt",
    "scripted_planner",
    "scripted_reflector",
    "study_abroad_profiles",
]

ROOT_LABEL = "Study abroad plan"
PLANNER_PROMPT = (
    "You are a study-abroad planner. Keep answers short. When the work splits into independent questions, "
    "open a branch for each with the create_session tool: profile region-expert for one region (vars.region), "
    "profile researcher for an in-depth question that needs this conversation's history."
)
OPENING = "I want to do a master's in computer science abroad next year, on about €25,000 a year."
SPLIT = "Look into Europe and North America separately, and work out a budget."
FOLLOW_UP = "Update the budget with anything new."


def region_expert_prompt(variables: Mapping[str, str]) -> str:
    """The ``region-expert`` prompt for ``vars.region``."""
    region = variables.get("region", "one region")
    return f"You are a study-abroad expert for {region}: universities, admission, tuition, scholarships and visas."


def study_abroad_profiles(*, poet: bool = True) -> dict[str, ForkProfile]:
    """The seed's three profiles: ``poet`` (fixed role), ``region-expert`` (template), ``researcher`` (base)."""
    profiles = {
        "region-expert": ForkProfile(
            system_prompt_fn=region_expert_prompt,
            system_prompt_mode="preset",
            description="a study-abroad expert for one region; set vars.region",
        ),
        "researcher": ForkProfile(
            system_prompt="You are a research assistant who analyses questions in depth.",
            system_prompt_mode="prepend",
            context="inherit",
            description="in-depth research with this conversation's history; add the topic as system_prompt",
        ),
    }
    if poet:
        profiles["poet"] = ForkProfile(
            system_prompt="You are a poet: you answer every message in verse.",
            system_prompt_mode="preset",
            description="answers in verse; its role cannot be overridden",
        )
    return profiles


@dataclass(frozen=True, slots=True, kw_only=True)
class Branch:
    """One branch the planner opens, and the question it is asked."""

    label: str
    profile: str
    question: str
    variables: dict[str, str] = field(default_factory=dict)
    system_prompt: str | None = None

    def arguments(self) -> dict[str, object]:
        """The ``create_session`` arguments that open this branch."""
        arguments: dict[str, object] = {"label": self.label, "profile": self.profile}
        if self.variables:
            arguments["vars"] = self.variables
        if self.system_prompt:
            arguments["system_prompt"] = self.system_prompt
        return arguments

    def options(self) -> ForkOptions:
        """The same fork, made in code."""
        return ForkOptions(
            label=self.label,
            profile=self.profile,
            profile_vars=self.variables or None,
            system_prompt=self.system_prompt,
        )


BRANCHES: tuple[Branch, ...] = (
    Branch(
        label="Europe",
        profile="region-expert",
        variables={"region": "Europe"},
        question="Which European countries fit a €25,000 yearly budget for a computer-science master's?",
    ),
    Branch(
        label="North America",
        profile="region-expert",
        variables={"region": "North America"},
        question="What would the same master's cost in the US or Canada?",
    ),
    Branch(
        label="Budget",
        profile="researcher",
        system_prompt="Topic: the yearly cost of the plan (tuition, living, travel).",
        question="Draft a yearly budget for the plan.",
    ),
)

_PLANNER_REPLIES: tuple[str, ...] = (
    # the branches' answers, in BRANCHES order
    "Germany: public universities charge no tuition, only a semester fee of about €350, and living costs "
    "€11,000-13,000 a year. The Netherlands: about €16,000 tuition for non-EU students plus €14,000 living.",
    "Canada: CAD 20,000-45,000 tuition plus about CAD 18,000 living. US public universities: $25,000-45,000 "
    "tuition. Both exceed €25,000 a year unless the programme is funded.",
    "Assuming the Netherlands: tuition €16,000, rent and living €13,000, travel and insurance €1,500. "
    "About €30,500 a year, €5,500 over budget.",
    # their consolidated memories
    "Germany: no tuition (about €350 per semester), living €11-13k a year. Netherlands: €16k tuition + €14k living.",
    "US and Canada exceed €25k a year unless funded; look for funded research master's.",
    "Draft budget assumes the Netherlands: about €30.5k a year, €5.5k over budget.",
    # the budget branch's next turn, with the reflector's insight in its context
    "With Germany instead: semester fees €700, living €12,000, travel and insurance €1,500. About €14,200 a "
    "year: well within €25,000, with room for a semester exchange.",
)


def scripted_planner() -> ScriptedLLM:
    """The planner model, offline: one scripted step per model call of `plan_trip`, in order."""
    return ScriptedLLM(
        [
            "Doable: many countries fit €25,000 a year. The big levers are tuition (from almost nothing to "
            "€40,000) and the cost of living in the city.",
            Reply(
                text="I'll open one branch per region and one for the budget.",
                tool_calls=[tool_call("create_session", branch.arguments()) for branch in BRANCHES],
            ),
            "Three branches are open: Europe, North America and Budget. Their findings come back as memories.",
            *_PLANNER_REPLIES,
        ],
        model="scripted-planner",
    )


def scripted_reflector() -> ScriptedLLM:
    """The reflector's model, offline: answers in JSON with one insight for the newest Budget branch."""

    def answer(request: LLMRequest) -> str:
        material = request.messages[-1].content
        budget_ids = re.findall(r"\[session_id=([^\]]+)\] Budget:", material)
        insight = (
            "The Europe branch found that German public universities charge no tuition (about €350 per "
            "semester): redo the budget for Germany."
        )
        return json.dumps(
            {
                "synthesis": "Europe fits the budget (Germany above all); North America only with funding. "
                "The budget still assumes the Netherlands.",
                "insights": [{"session_id": budget_ids[-1], "content": insight}] if budget_ids else [],
            }
        )

    return ScriptedLLM([answer], model="scripted-reflector")


class Narrator(Protocol):
    """Shows the scenario as it runs (rich in ``stellate demo``, plain print in the example)."""

    def section(self, title: str) -> None:
        """A new part of the story begins."""

    def user(self, text: str) -> None:
        """The user says ``text``."""

    def event(self, event: TurnEvent) -> None:
        """A turn event arrived."""

    def note(self, text: str) -> None:
        """Something worth pointing out."""


@dataclass(slots=True, kw_only=True)
class Trip:
    """What `plan_trip` produced."""

    root_id: str
    branches: dict[str, str] = field(default_factory=dict)
    """Branch label -> session id."""
    reflection: Reflection | None = None
    insight_target: str | None = None
    """Label of the branch whose next turn consumed an insight."""
    insight: str | None = None
    insight_consumed: bool = False
    """Whether the insight is gone from the branch after its turn (consumed by the successful call)."""


async def plan_trip(agent: Agent, narrator: Narrator) -> Trip:
    """Run the scenario on ``agent`` (which needs the profiles, ``create_session`` and a reflector)."""
    root = await agent.create_session(label=ROOT_LABEL, system_prompt=PLANNER_PROMPT)
    trip = Trip(root_id=root.id)
    narrator.section(f"{ROOT_LABEL}  {root.id}")
    for text in (OPENING, SPLIT):
        await say(agent, narrator, root.id, text)
    trip.branches = await _ensure_branches(agent, narrator, root.id)
    for branch in BRANCHES:
        narrator.section(f"Branch {branch.label}  {trip.branches[branch.label]}")
        await say(agent, narrator, trip.branches[branch.label], branch.question)
    await _consolidate(agent, narrator, trip)
    await _reflect(agent, narrator, trip)
    await _consume_insight(agent, narrator, trip)
    return trip


async def say(agent: Agent, narrator: Narrator, session_id: str, text: str) -> None:
    """One user turn, narrated as it streams."""
    narrator.user(text)
    async for event in agent.stream(session_id, text):
        narrator.event(event)


async def _ensure_branches(agent: Agent, narrator: Narrator, root_id: str) -> dict[str, str]:
    children = (await agent.get_node(root_id)).children
    found: dict[str, str] = {}
    for branch in BRANCHES:
        match = next((c.id for c in children if branch.label.lower() in c.label.lower()), None)
        if match is None:
            narrator.note(f"the model opened no {branch.label!r} branch; forking it in code")
            match = (await agent.fork_session(root_id, branch.options())).id
        found[branch.label] = match
    return found


async def _consolidate(agent: Agent, narrator: Narrator, trip: Trip) -> None:
    narrator.section("Consolidation: each branch publishes a memory")
    for label, session_id in trip.branches.items():
        narrator.note(f"{label}: {await agent.consolidate_session(session_id)}")


async def _reflect(agent: Agent, narrator: Narrator, trip: Trip) -> None:
    narrator.section("Reflection: one look over every branch's memory")
    trip.reflection = reflection = await agent.reflect(synthesis_session_id=trip.root_id)
    narrator.note(f"synthesis (stored as the planner's memory): {reflection.synthesis}")
    labels = {session_id: label for label, session_id in trip.branches.items()}
    for session_id, text in reflection.insights.items():
        narrator.note(f"insight → {labels.get(session_id, session_id)}: {text}")
    trip.insight_target = next((label for label, sid in trip.branches.items() if sid in reflection.insights), None)


async def _consume_insight(agent: Agent, narrator: Narrator, trip: Trip) -> None:
    if trip.insight_target is None:
        narrator.note("the reflector sent these branches no insight this time")
        return
    session_id = trip.branches[trip.insight_target]
    trip.insight = (await agent.get_session_digest(session_id)).insight
    narrator.section(f"{trip.insight_target}: its next model call receives the insight")
    await say(agent, narrator, session_id, FOLLOW_UP)
    trip.insight_consumed = (await agent.get_session_digest(session_id)).insight is None
