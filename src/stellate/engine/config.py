"""Configuration types of the fork mechanism (seed 000): one six-field base and two extensions.

``None`` always means "this layer does not contribute; inherit". An empty list of skills is a value
("no skills"), not an absence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from stellate.llm.types import LLMAdapter
from stellate.session.types import CompressFn, ConsolidateFn, ForkContext

__all__ = [
    "ForkOptions",
    "ForkProfile",
    "LLMRef",
    "SessionConfig",
    "SystemPromptMode",
    "ToolRef",
]

LLMRef: TypeAlias = "LLMAdapter | str"
"""An adapter, or the name it was registered under (names survive a restart; objects do not)."""
ToolRef: TypeAlias = Any
"""A tool object, or the name it was registered under."""
SystemPromptMode: TypeAlias = Literal["preset", "prepend", "append"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionConfig:
    """The six settings every layer of the merge chain may set."""

    system_prompt: str | None = None
    llm: LLMRef | None = None
    tools: Sequence[ToolRef] | None = None
    """Tools (or registered tool names) the session may call; replaced, never merged."""
    skills: Sequence[str] | None = None
    """Skill whitelist: None inherits (and at the bottom means every skill), ``[]`` means none."""
    consolidate_fn: ConsolidateFn | None = None
    compress_fn: CompressFn | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkProfile(SessionConfig):
    """A named fork template, registered once and referenced by name from forks."""

    system_prompt_fn: Callable[[Mapping[str, str]], str] | None = None
    """Builds the profile's prompt from ``profile_vars``; wins over ``system_prompt``."""
    system_prompt_mode: SystemPromptMode = "prepend"
    """``preset``: only the profile's prompt; ``prepend``: profile then fork's; ``append``: fork's then profile."""
    context: ForkContext | Literal["compress"] | None = None
    """Default context strategy of forks made with this profile."""
    prompt: str | None = None
    """Default opening assistant message of forks made with this profile."""
    description: str = ""
    """Shown to the model in the ``create_session`` tool."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkOptions(SessionConfig):
    """One fork request."""

    label: str
    """Display name of the child (required)."""
    prompt: str | None = None
    """Opening assistant message written into the child (wins over the profile's)."""
    context: ForkContext | Literal["compress"] | None = None
    """``none`` (default), ``inherit`` (by reference), ``compress`` (summary in the child's prompt), or a
    function selecting the messages to copy. Wins over the profile's."""
    topology_parent_id: str | None = None
    """Where the child hangs in the forest (default: the source)."""
    profile: str | None = None
    profile_vars: Mapping[str, str] | None = None
    session_id: str | None = None
    """Id for the child (default: a new one)."""
    at_seq: int | None = None
    """With ``inherit``: fork at the turn holding this seq (a clicked message) instead of the latest one."""
    boundary: int | None = None
    """With ``inherit``: fork at exactly this seq, refused (``open_turn``, ``invalid_boundary``) if unsafe."""
