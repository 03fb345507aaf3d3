"""Registries of named parts, and how a session's runtime is rebuilt from what it recorded.

Live objects (adapters, tools, functions) cannot be stored. A session records the *names* it was created
with — adapter, tools, profile, skills — in its ``config/frozen`` event; after a restart the agent looks
those names up here, so a branch keeps its model and tools (seed 000 loses them; DESIGN.md §4 fixes it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from stellate.engine.builtins import ActivateSkillTool, CreateSessionTool, ForkFromTool
from stellate.engine.config import ForkProfile, SessionConfig
from stellate.engine.merge import later_wins
from stellate.engine.skills import SkillSet
from stellate.engine.tools import Tool, ToolRegistry
from stellate.errors import UsageError
from stellate.llm.types import LLMAdapter

__all__ = ["BUILTIN_TOOLS", "Registries", "frozen_config", "overlay"]

BUILTIN_TOOLS = ("create_session", "activate_skill")


@dataclass(slots=True, kw_only=True)
class Registries:
    """Adapters, tools, profiles and skills an agent knows by name."""

    adapters: dict[str, LLMAdapter] = field(default_factory=dict)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    profiles: dict[str, ForkProfile] = field(default_factory=dict)
    skills: SkillSet = field(default_factory=lambda: SkillSet.from_skills(()))
    builtins: tuple[str, ...] = ()
    remote: list[Tool] = field(default_factory=list)
    """Tools of MCP servers as last listed (names already namespaced where they clash)."""

    def adapter_name(self, llm: LLMAdapter | str | None) -> str | None:
        """The name an adapter is registered under (or the name itself)."""
        if llm is None or isinstance(llm, str):
            return llm
        return next((name for name, known in self.adapters.items() if known is llm), None)

    def resolve_llm(self, llm: LLMAdapter | str | None) -> LLMAdapter:
        """The adapter for a reference.

        Raises:
            UsageError: no model configured, or an unknown adapter name.
        """
        if llm is None:
            raise UsageError("no model is configured: pass llm=... to Agent, or defaults=SessionConfig(llm=...)")
        if not isinstance(llm, str):
            return llm
        adapter = self.adapters.get(llm)
        if adapter is None:
            known = ", ".join(sorted(self.adapters)) or "none"
            raise UsageError(f"no adapter registered as {llm!r} (registered: {known})", code="adapter_not_found")
        return adapter

    def resolve_tools(self, refs: Sequence[Any] | None) -> list[Tool]:
        """Tools for references (objects or registered names); None means every registered tool."""
        if refs is None:
            return [*self.tools, *self.remote]
        remote = {item.name: item for item in self.remote}
        resolved: list[Tool] = []
        for ref in refs:
            if isinstance(ref, str):
                found = self.tools.get(ref) or remote.get(ref)
                if found is None:
                    raise UsageError(f"no tool registered as {ref!r}", code="tool_not_found")
                resolved.append(found)
            else:
                resolved.append(ref)
        return resolved

    def session_tools(self, config: SessionConfig, fork: ForkFromTool) -> ToolRegistry:
        """The registry a session's turns use: its tools plus the enabled built-ins, built for it."""
        registry = ToolRegistry()
        for item in self.resolve_tools(config.tools):
            registry.register(item, replace=True)
        if "create_session" in self.builtins:
            descriptions = {name: p.description for name, p in self.profiles.items()}
            registry.register(CreateSessionTool(fork, tuple(self.profiles), descriptions), replace=True)
        if "activate_skill" in self.builtins:
            registry.register(ActivateSkillTool(self.skills.visible(config.skills)), replace=True)
        return registry

    def config_from_frozen(self, defaults: SessionConfig, frozen: Mapping[str, Any]) -> SessionConfig:
        """A session's configuration after a restart: defaults, then its profile, then the names it recorded."""
        layers: list[SessionConfig] = [defaults]
        profile = self.profiles.get(frozen.get("profile") or "")
        if profile is not None:
            layers.append(profile)
        layers.append(
            SessionConfig(
                system_prompt=frozen.get("system_prompt"),
                llm=frozen.get("llm"),
                tools=frozen.get("tools"),
                skills=frozen.get("skills"),
            )
        )
        merged = {f.name: later_wins(*(getattr(layer, f.name) for layer in layers)) for f in fields(SessionConfig)}
        return SessionConfig(**merged)


def frozen_config(
    config: SessionConfig,
    registries: Registries,
    *,
    profile: str | None = None,
    profile_vars: Mapping[str, str] | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a session records of its configuration: prompt, skills, names of its parts, and where each came from.

    ``sources`` (a fork's) names the layer of the merge chain each setting came from (see `config_sources`).
    """
    frozen: dict[str, Any] = {
        "system_prompt": config.system_prompt,
        "skills": list(config.skills) if config.skills is not None else None,
        "llm": registries.adapter_name(config.llm),
        "tools": _tool_names(config.tools),
        "profile": profile,
        "profile_vars": dict(profile_vars) if profile_vars else None,
        "sources": dict(sources) if sources else None,
    }
    return {key: value for key, value in frozen.items() if value is not None}


def _tool_names(refs: Iterable[Any] | None) -> list[str] | None:
    if refs is None:
        return None
    return [ref if isinstance(ref, str) else ref.name for ref in refs]


def overlay(base: SessionConfig, over: SessionConfig | None, system_prompt: str | None) -> SessionConfig:
    """``base`` with ``over``'s non-None fields, then ``system_prompt`` if given."""
    layers: Sequence[SessionConfig] = [base] if over is None else [base, over]
    values = {
        name: next((getattr(layer, name) for layer in reversed(layers) if getattr(layer, name) is not None), None)
        for name in ("system_prompt", "llm", "tools", "skills", "consolidate_fn", "compress_fn")
    }
    if system_prompt is not None:
        values["system_prompt"] = system_prompt
    return SessionConfig(**values)
