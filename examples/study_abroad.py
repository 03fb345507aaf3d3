"""A study-abroad planner on a forest of sessions, with three kinds of fork profile.

    python examples/study_abroad.py            # offline, scripted model
    OPENAI_API_KEY=... python examples/study_abroad.py      # or ANTHROPIC_API_KEY / DEEPSEEK_API_KEY

The planner hears the goal and splits the work: the model calls ``create_session`` to open a branch per
region (profile ``region-expert``, a prompt template filled from ``vars``) and a budget branch (profile
``researcher``, which prepends its prompt and inherits the planner's history). Each branch answers, its
memory is consolidated, a reflector sends the budget branch an insight, and the budget's next call uses
it. Last, a ``poet`` branch shows a ``preset`` profile: the fork's own system prompt is ignored.

The flow is shared with ``stellate demo`` (`stellate.cli.scenario`, which needs ``stellate[cli]`` only
for the command itself, not for this script).
"""

from __future__ import annotations

import asyncio
import os

from stellate import Agent, ForkOptions, Reflector, TopologyNode
from stellate.cli.scenario import ROOT_LABEL, plan_trip, scripted_planner, scripted_reflector, study_abroad_profiles
from stellate.engine.events import TextChunk, ToolCallStarted, TurnEvent, TurnFinished
from stellate.llm import LLMAdapter, ScriptedLLM, create_adapter

POEM = "Pack light, the Rhine is wide and slow; / the cheapest road is where you'll grow."

#: Provider, key variable, adapter options: the first provider whose key is set is used.
PROVIDERS = (
    ("openai", "OPENAI_API_KEY", {"model": "gpt-4o-mini"}),
    ("anthropic", "ANTHROPIC_API_KEY", {"model": "claude-sonnet-4-20250514"}),
    ("openai", "DEEPSEEK_API_KEY", {"model": "deepseek-chat", "base_url": "https://api.deepseek.com/v1"}),
)


def real_model() -> LLMAdapter | None:
    """A hosted model when one of the API keys is set."""
    for adapter, key_env, options in PROVIDERS:
        key = os.environ.get(key_env)
        if key:
            return create_adapter(adapter, api_key=key, **options)
    return None


class PrintNarrator:
    """Prints the story as plain text."""

    def section(self, title: str) -> None:
        print(f"\n== {title}")

    def user(self, text: str) -> None:
        print(f"you: {text}")

    def event(self, event: TurnEvent) -> None:
        if isinstance(event, TextChunk):
            print(event.text, end="", flush=True)
        elif isinstance(event, ToolCallStarted):
            print(f"\n  [tool] {event.call.name} {event.call.arguments}")
        elif isinstance(event, TurnFinished):
            print()

    def note(self, text: str) -> None:
        print(f"  - {text}")


async def main() -> None:
    llm = real_model()
    planner = llm or scripted_planner()
    agent = Agent(
        "memory://",
        llm=planner,
        profiles=study_abroad_profiles(),  # poet, region-expert, researcher
        builtin_tools=["create_session"],
        reflector=Reflector(llm or scripted_reflector()),
    )
    async with agent:
        narrator = PrintNarrator()
        trip = await plan_trip(agent, narrator)
        if isinstance(planner, ScriptedLLM):
            planner.push(POEM)
        poet = await agent.fork_session(
            trip.root_id,
            ForkOptions(label="Send-off poem", profile="poet", system_prompt="Write prose."),  # preset: ignored
        )
        narrator.section(f"Branch {poet.label} (profile poet, preset)")
        reply = await agent.turn(poet.id, "Send me off with two lines.")
        print(reply.content)
        print_forest(await agent.get_node(trip.root_id), {d.id: d.memory for d in await agent.list_session_digests()})
        print(f"\ninsight consumed by {trip.insight_target}: {trip.insight_consumed}")


def print_forest(node: TopologyNode, memories: dict[str, str | None], depth: int = 0) -> None:
    """Print a topology node and its children, indented, with their memories."""
    if depth == 0:
        print(f"\n== The forest ({ROOT_LABEL})")
    memory = f": {memories[node.id]}" if memories.get(node.id) else ""
    print(f"{'  ' * depth}- {node.label} [{node.turn_count} turn(s)]{memory}")
    for child in node.children:
        print_forest(child, memories, depth + 1)


if __name__ == "__main__":
    asyncio.run(main())
