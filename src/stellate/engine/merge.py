"""The four-layer merge chain (seed 000): defaults → parent → profile → fork options.

A later layer's value wins unless it is None. The system prompt has its own rule when a profile is in
play (``preset`` / ``prepend`` / ``append``); skills are replaced whole, and ``[]`` is a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from stellate.engine.config import ForkOptions, ForkProfile, SessionConfig

__all__ = ["later_wins", "merge_config", "resolve_profile_prompt"]

T = TypeVar("T")
_FIELDS = tuple(f.name for f in fields(SessionConfig))


def later_wins(*values: T | None) -> T | None:
    """The last value that is not None."""
    result: T | None = None
    for value in values:
        if value is not None:
            result = value
    return result


def resolve_profile_prompt(profile: ForkProfile, fork_prompt: str | None, variables: Mapping[str, str]) -> str | None:
    """The system prompt a profile and a fork's own prompt combine into (None when neither gives one)."""
    source = profile.system_prompt_fn(variables) if profile.system_prompt_fn else profile.system_prompt
    if profile.system_prompt_mode == "preset":
        return source
    parts = [source, fork_prompt] if profile.system_prompt_mode == "prepend" else [fork_prompt, source]
    present = [p for p in parts if p is not None]
    return "\n\n".join(present) if present else None


def merge_config(
    defaults: SessionConfig,
    parent: SessionConfig,
    profile: ForkProfile | None,
    options: ForkOptions,
) -> SessionConfig:
    """Merge the four layers into the child's configuration.

    Args:
        defaults: The agent's defaults.
        parent: What the source session persisted (its system prompt and skills).
        profile: The profile named by the fork, if any.
        options: The fork request.
    """
    layers: list[SessionConfig] = [defaults, parent, *([profile] if profile else []), options]
    merged: dict[str, Any] = {name: later_wins(*(getattr(layer, name) for layer in layers)) for name in _FIELDS}
    if profile is not None:
        prompt = resolve_profile_prompt(profile, options.system_prompt, options.profile_vars or {})
        merged["system_prompt"] = (
            prompt if prompt is not None else later_wins(defaults.system_prompt, parent.system_prompt)
        )
    return SessionConfig(**merged)
