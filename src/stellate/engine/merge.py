"""The four-layer merge chain (seed 000): defaults → parent → profile → fork options.

A later layer's value wins unless it is None. The system prompt has its own rule when a profile is in
play (``preset`` / ``prepend`` / ``append``); skills are replaced whole, and ``[]`` is a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from stellate.engine.config import ForkOptions, ForkProfile, SessionConfig

__all__ = ["SOURCE_FIELDS", "config_sources", "later_wins", "merge_config", "resolve_profile_prompt"]

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


#: Settings whose origin a child records (the runtime functions are not recorded at all).
SOURCE_FIELDS = ("system_prompt", "llm", "tools", "skills")


def config_sources(
    defaults: SessionConfig, parent: SessionConfig, profile: ForkProfile | None, options: ForkOptions
) -> dict[str, str]:
    """Which layer each merged setting came from: ``defaults``, ``parent``, ``profile`` or ``options``.

    A system prompt a profile combined with the fork's own is ``profile+options`` (``prepend``) or
    ``options+profile`` (``append``). Settings no layer sets are left out.
    """
    named = [
        ("defaults", defaults),
        ("parent", parent),
        *([("profile", profile)] if profile else []),
        ("options", options),
    ]
    sources = {
        name: next(label for label, layer in reversed(named) if getattr(layer, name) is not None)
        for name in SOURCE_FIELDS
        if any(getattr(layer, name) is not None for _, layer in named)
    }
    if profile is not None:  # the prompt follows the profile's mode (see `merge_config`)
        sources.pop("system_prompt", None)
        fallback = "parent" if parent.system_prompt is not None else None
        fallback = fallback or ("defaults" if defaults.system_prompt is not None else None)
        combined = _profile_prompt_source(profile, options) or fallback
        if combined is not None:
            sources["system_prompt"] = combined
    return sources


def _profile_prompt_source(profile: ForkProfile, options: ForkOptions) -> str | None:
    has_profile = profile.system_prompt_fn is not None or profile.system_prompt is not None
    if profile.system_prompt_mode == "preset":
        return "profile" if has_profile else None
    parts = ["profile", "options"] if profile.system_prompt_mode == "prepend" else ["options", "profile"]
    given = {"profile": has_profile, "options": options.system_prompt is not None}
    present = [part for part in parts if given[part]]
    return "+".join(present) or None
