"""Fork planning (seed 000): validate the profile, apply the split guard, merge the four layers.

This is the pure half of a fork; the agent executes the plan (topology node and session in one atomic
create, then the ``session_forked`` event). Code forks and the model's ``create_session`` share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stellate.engine.config import ForkOptions, ForkProfile, SessionConfig
from stellate.engine.merge import config_sources, later_wins, merge_config
from stellate.errors import ForkError, UsageError
from stellate.session.types import ForkContext

__all__ = ["ForkPlan", "SplitGuard", "plan_fork"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitGuard:
    """Refuses forks from sessions that are too young or forked too recently.

    Args:
        min_turns: Turns the source must have had.
        cooldown_turns: Turns the source must have had since its previous fork.
    """

    min_turns: int = 3
    cooldown_turns: int = 5

    def check(self, *, turn_count: int, last_fork_turn: int | None) -> None:
        """Raise ``ForkError(split_rejected)`` when the source may not fork yet."""
        if turn_count < self.min_turns:
            raise ForkError(
                f"the session has {turn_count} turn(s); a fork needs at least {self.min_turns}",
                code="split_rejected",
                turn_count=turn_count,
            )
        if last_fork_turn is not None and turn_count - last_fork_turn < self.cooldown_turns:
            raise ForkError(
                f"the session forked {turn_count - last_fork_turn} turn(s) ago; wait {self.cooldown_turns} turns "
                "between forks",
                code="split_rejected",
                turn_count=turn_count,
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkPlan:
    """Everything needed to create the child."""

    config: SessionConfig
    """The merged configuration."""
    profile: str | None
    context: ForkContext | Literal["compress"]
    prompt: str | None
    topology_parent_id: str
    sources: dict[str, str]
    """Which layer each setting came from (see `config_sources`); recorded in the child's config."""


def plan_fork(
    *,
    source_id: str,
    defaults: SessionConfig,
    parent: SessionConfig,
    profiles: Mapping[str, ForkProfile],
    options: ForkOptions,
) -> ForkPlan:
    """Validate ``options`` and merge the chain defaults → parent → profile → options.

    Raises:
        ForkError: ``profile_not_found`` for an unknown profile.
        UsageError: an empty label.
    """
    if not options.label or not options.label.strip():
        raise UsageError("a fork needs a non-empty label")
    profile: ForkProfile | None = None
    if options.profile is not None:
        profile = profiles.get(options.profile)
        if profile is None:
            known = ", ".join(sorted(profiles)) or "none registered"
            raise ForkError(f"no fork profile {options.profile!r} (known: {known})", code="profile_not_found")
    chosen: ForkContext | Literal["compress"] | None = later_wins(profile.context if profile else None, options.context)
    sources = config_sources(defaults, parent, profile, options)
    if chosen == "compress":  # the parent's summarized history joins the prompt
        sources["system_prompt"] = "+".join(filter(None, (sources.get("system_prompt"), "compressed parent")))
    return ForkPlan(
        config=merge_config(defaults, parent, profile, options),
        profile=options.profile,
        context=chosen if chosen is not None else "none",
        prompt=later_wins(profile.prompt if profile else None, options.prompt),
        topology_parent_id=options.topology_parent_id or source_id,
        sources=sources,
    )
