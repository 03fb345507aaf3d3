"""The reflector of ``stellate serve``: its flags, the config file's ``[reflector]`` table, and building it.

Any reflector flag, or a ``[reflector]`` table in the config file, turns reflection on (flags win key by key).
It reflects with the served model unless another model of the same provider is named, with the built-in
prompt unless one is given, and on request only unless ``every`` seconds are set.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stellate.cli.settings import ConfigFile, ReflectorEntry
from stellate.errors import UsageError

if TYPE_CHECKING:
    from stellate.agent import Reflector
    from stellate.cli.providers import ProviderSettings
    from stellate.llm import LLMAdapter
    from stellate.session.types import Language

__all__ = ["ReflectorSettings", "add_reflector_options", "build_reflector", "reflector_settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectorSettings:
    """The reflector asked for, flags and config file merged."""

    model: str | None = None
    """A model of the configured provider; None reflects with the served model."""
    instructions: str | None = None
    """The prompt; None is the built-in one."""
    every: float | None = None
    """Seconds between scheduled reflections; None reflects only on request."""
    language: Language = "en"
    """Of the built-in prompt."""


def add_reflector_options(parser: argparse.ArgumentParser) -> None:
    """``--reflector``, ``--reflector-model``, ``--reflector-prompt`` and ``--reflect-every``."""
    add = parser.add_argument
    add("--reflector", action="store_true", help="reflect over every branch with the served model (the map's Reflect)")
    add("--reflector-model", dest="reflector_model", metavar="NAME", help="the reflector's model (same provider)")
    add("--reflector-prompt", dest="reflector_prompt", metavar="FILE", help="a file holding the reflector's prompt")
    add(
        "--reflect-every",
        dest="reflect_every",
        type=_seconds,
        metavar="SECONDS",
        help="also reflect on a schedule, every SECONDS (once per interval, whichever worker runs it)",
    )


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def reflector_settings(args: argparse.Namespace, file: ConfigFile) -> ReflectorSettings | None:
    """The reflector the flags and the config file ask for; None when neither asks for one.

    Raises:
        UsageError: ``config_invalid`` when a prompt file cannot be read.
    """
    entry = file.reflector
    flags = (args.reflector, args.reflector_model, args.reflector_prompt, args.reflect_every)
    if entry is None and not any(flag not in (None, False) for flag in flags):
        return None
    entry = entry or ReflectorEntry()
    if args.reflector_prompt is not None:
        instructions: str | None = _read_prompt(args.reflector_prompt)
    elif entry.prompt_file is not None:
        instructions = _read_prompt(entry.prompt_file)
    else:
        instructions = entry.prompt
    return ReflectorSettings(
        model=args.reflector_model or entry.model,
        instructions=instructions,
        every=args.reflect_every or entry.every,
        language=entry.language,
    )


def _read_prompt(name: str) -> str:
    path = Path(name).expanduser()
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise UsageError(f"cannot read the reflector's prompt {path}: {exc.strerror}", code="config_invalid") from exc
    if not text:
        raise UsageError(f"the reflector's prompt {path} is empty: write the prompt in it", code="config_invalid")
    return text


def build_reflector(
    wanted: ReflectorSettings, provider: ProviderSettings, llm: LLMAdapter, *, configured: bool
) -> Reflector:
    """The reflector ``wanted`` describes, on ``llm`` or on another model of the same provider.

    Raises:
        UsageError: ``provider_not_configured`` when no model provider is configured.
    """
    from stellate.agent import Reflector
    from stellate.cli.providers import build_adapter, not_configured

    if not configured:
        problem = not_configured()
        raise UsageError(f"the reflector needs a model: {problem}", code=problem.code)
    same = wanted.model in (None, llm.model)
    model = llm if same else build_adapter(dataclasses.replace(provider, model=wanted.model))
    return Reflector(model, language=wanted.language, instructions=wanted.instructions)
