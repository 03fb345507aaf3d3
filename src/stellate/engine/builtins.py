"""Built-in tools (opt-in): ``create_session`` lets the model fork, ``activate_skill`` serves skills.

Both are built per session: ``create_session`` offers a ``profile`` enum and ``vars`` only when profiles
are registered, and ``activate_skill`` lists and serves only the skills the session's whitelist allows
(the reference system leaks every skill; we do not).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stellate.engine.config import ForkOptions
from stellate.engine.skills import SkillSet
from stellate.engine.tools import ToolContext, ToolResult
from stellate.errors import StellateError
from stellate.llm.types import ToolSpec

__all__ = ["ACTIVATE_SKILL", "CREATE_SESSION", "ActivateSkillTool", "CreateSessionTool", "ForkFromTool"]

CREATE_SESSION = "create_session"
ACTIVATE_SKILL = "activate_skill"

ForkFromTool = Callable[[str, ForkOptions], Awaitable[str]]
"""Forks ``options`` from the session a tool runs in; returns the child's id."""

_CONTEXTS = ("none", "inherit", "compress")


@dataclass(frozen=True, slots=True)
class CreateSessionTool:
    """``create_session``: the model splits work into a child session (same path as code forks)."""

    fork: ForkFromTool
    profiles: Sequence[str] = ()
    profile_descriptions: dict[str, str] | None = None

    @property
    def name(self) -> str:
        """Tool name."""
        return CREATE_SESSION

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        text = (
            "Create a child session (a new branch of this work) to handle a sub-task on its own. "
            "Give it a short label. Optionally give it a system prompt, an opening message, and whether it "
            "starts empty ('none'), with this conversation's history ('inherit') or with a summary of it ('compress')."
        )
        if self.profiles:
            described = [f"- {n}: {(self.profile_descriptions or {}).get(n, '')}".rstrip(": ") for n in self.profiles]
            text += " Available profiles:\n" + "\n".join(described)
        return text

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the arguments; ``profile`` and ``vars`` appear only when profiles exist."""
        properties: dict[str, Any] = {
            "label": {"type": "string", "description": "Short name of the child session."},
            "system_prompt": {"type": "string", "description": "Instructions for the child session."},
            "prompt": {"type": "string", "description": "Opening message the child session starts with."},
            "context": {"type": "string", "enum": list(_CONTEXTS), "description": "History the child starts with."},
        }
        if self.profiles:
            properties["profile"] = {"type": "string", "enum": list(self.profiles), "description": "Profile to use."}
            properties["vars"] = {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Values for the profile's prompt template.",
            }
        return {"type": "object", "properties": properties, "required": ["label"], "additionalProperties": False}

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Validate the arguments and fork; mistakes become error results the model can read."""
        problem = self._check(arguments)
        if problem:
            return ToolResult(content=f"create_session was not run: {problem}", is_error=True)
        options = ForkOptions(
            label=arguments["label"],
            system_prompt=arguments.get("system_prompt"),
            prompt=arguments.get("prompt"),
            context=arguments.get("context"),
            profile=arguments.get("profile"),
            profile_vars=arguments.get("vars"),
        )
        try:
            child_id = await self.fork(context.session_id, options)
        except StellateError as exc:
            return ToolResult(content=f"create_session failed ({exc.code}): {exc.message}", is_error=True)
        return ToolResult(content=f'Created session {child_id} labelled "{options.label}".')

    def _check(self, arguments: dict[str, Any]) -> str | None:
        allowed = set(self.parameters["properties"])
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            return f"unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        label = arguments.get("label")
        if not isinstance(label, str) or not label.strip():
            return "'label' is required and must be a non-empty string"
        for key in ("system_prompt", "prompt"):
            if key in arguments and not isinstance(arguments[key], str):
                return f"'{key}' must be a string"
        if "context" in arguments and arguments["context"] not in _CONTEXTS:
            return f"'context' must be one of {', '.join(_CONTEXTS)}"
        if "profile" in arguments and arguments["profile"] not in self.profiles:
            return f"unknown profile {arguments['profile']!r}; available: {', '.join(self.profiles) or 'none'}"
        variables = arguments.get("vars", {})
        if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
            return "'vars' must be an object of strings"
        return None


@dataclass(frozen=True, slots=True)
class ActivateSkillTool:
    """``activate_skill``: returns a skill's full content; sees only the session's allowed skills."""

    skills: SkillSet

    @property
    def name(self) -> str:
        """Tool name."""
        return ACTIVATE_SKILL

    @property
    def description(self) -> str:
        """Lists the allowed skills by name and description."""
        listing = "\n".join(f"- {s.name}: {s.description}" for s in self.skills) or "(no skills are available)"
        return "Load the full instructions of a skill before using it. Skills:\n" + listing

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema; the enum is omitted when empty (some providers reject empty enums)."""
        name: dict[str, Any] = {"type": "string", "description": "Name of the skill to activate."}
        if len(self.skills):
            name["enum"] = list(self.skills.names())
        return {"type": "object", "properties": {"name": name}, "required": ["name"], "additionalProperties": False}

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """The skill's content, or an error naming the skills this session may use."""
        name = arguments.get("name")
        skill = self.skills.get(name) if isinstance(name, str) else None
        if skill is None:
            available = ", ".join(self.skills.names()) or "none"
            return ToolResult(content=f"No skill {name!r} is available here. Available: {available}.", is_error=True)
        return ToolResult(content=skill.content)
