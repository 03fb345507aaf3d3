"""Spaces: tenants, each with its own forest, served by its own `Agent` over a store scoped to it.

The agents are made on first use by the factory the app was given, so a space costs nothing until a key
of it is used; they share the store's connections (a scoped store is a view, not a new connection).
"""

from __future__ import annotations

from collections.abc import Callable

from stellate.agent import Agent
from stellate.server.problems import ProblemError

__all__ = ["DEFAULT_SPACE", "Spaces"]

DEFAULT_SPACE = "default"

AgentFactory = Callable[[str], Agent]
"""Builds the agent of a space from its name."""


class Spaces:
    """The agents of the spaces the server has seen.

    Args:
        default: The agent of the default space.
        factory: Builds the agent of any other space; without it only the default space exists.
    """

    def __init__(self, default: Agent, factory: AgentFactory | None = None) -> None:
        default.record_history()  # /v1/events serves the space's event history
        self._agents: dict[str, Agent] = {DEFAULT_SPACE: default}
        self._factory = factory

    def agent(self, space: str) -> Agent:
        """The agent of ``space``.

        Raises:
            ProblemError: ``not_found`` when the server serves only the default space.
        """
        agent = self._agents.get(space)
        if agent is None:
            if self._factory is None:
                raise ProblemError("not_found", f"this server serves only the {DEFAULT_SPACE!r} space")
            agent = self._agents[space] = self._factory(space)
            agent.record_history()
        return agent

    def agents(self) -> list[Agent]:
        """Every agent made so far."""
        return list(self._agents.values())

    async def close(self) -> None:
        """Close every agent (their scoped stores are views; the caller closes the store itself)."""
        for agent in self._agents.values():
            await agent.close()
