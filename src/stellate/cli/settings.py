"""Where the command's settings come from: flags, then environment variables, then the TOML config file.

Config file (``--config``, else ``$STELLATE_CONFIG``, else ``~/.config/stellate/config.toml``)::

    provider = "deepseek"          # openai | anthropic | deepseek | local
    model = "deepseek-chat"
    base_url = "https://api.deepseek.com/v1"
    api_key = "..."                # better: DEEPSEEK_API_KEY in the environment
    context_tokens = 64000
    schema = "team_a"              # PostgreSQL only: the schema of this deployment's tables

    skills_dir = "skills"          # SKILL.md folders the sessions may activate (``--skills`` wins)

    [prices."deepseek-chat"]       # per million tokens, for the cost of each call (none built in)
    input = 0.27
    output = 1.10

    [profiles.expert]              # fork profiles for /fork --profile and the model's create_session
    system_prompt = "You are an expert in ${topic}."   # ${name} is filled from --var name=value
    mode = "preset"                # preset | prepend | append
    context = "none"               # none | inherit | compress
    skills = ["search", "summarize"]   # the skills its forks may use ([] = none; absent = inherit)
    model = "qwen2.5-7b"           # its forks call this model of the same provider
    tools = ["create_session"]     # the tools its forks may call (registered names)

    [reflector]                    # ``stellate serve``: reflection over every branch (see cli/reflection.py)
    model = "deepseek-reasoner"    # default: the served model
    prompt_file = "reflect.txt"    # or prompt = "..."; default: the built-in prompt
    every = 600                    # seconds between scheduled reflections; absent: only on request
    language = "en"                # of the built-in prompt: en | zh
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError

from stellate.cli.locations import DEFAULT_CONFIG, DEFAULT_DB, config_path, database_location
from stellate.errors import UsageError

if TYPE_CHECKING:
    from stellate.cli.providers import ProviderSettings
    from stellate.engine import ForkProfile

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_DB",
    "DEFAULT_PROFILES",
    "ConfigFile",
    "PriceEntry",
    "ProfileEntry",
    "ProviderFlags",
    "ReflectorEntry",
    "config_path",
    "database_location",
    "fork_profiles",
    "load_config",
    "profile_models",
    "resolve_provider",
    "schema_name",
]


class ProfileEntry(BaseModel):
    """A fork profile in the config file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system_prompt: str | None = None
    """The profile's prompt; ``${name}`` placeholders are filled from the fork's variables."""
    mode: Literal["preset", "prepend", "append"] = "prepend"
    context: Literal["none", "inherit", "compress"] | None = None
    prompt: str | None = None
    description: str = ""
    skills: list[str] | None = None
    """The skills forks of this profile may use (``[]``: none; absent: inherited)."""
    model: str | None = None
    """A model of the configured provider that forks of this profile call (absent: inherited)."""
    tools: list[str] | None = None
    """Names of the tools forks of this profile may call (absent: inherited)."""


class ReflectorEntry(BaseModel):
    """The ``[reflector]`` table: ``stellate serve`` reflects over every branch (its presence turns it on)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    """A model of the configured provider (default: the served model)."""
    prompt: str | None = None
    """Replaces the built-in prompt."""
    prompt_file: str | None = None
    """A file holding the prompt (relative to the working directory)."""
    every: PositiveFloat | None = None
    """Seconds between scheduled reflections; absent: only when asked (the map's Reflect, ``POST /v1/reflect``)."""
    language: Literal["en", "zh"] = "en"
    """Language of the built-in prompt."""


class PriceEntry(BaseModel):
    """A model's price in the config file, per million tokens (in any one currency)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)


class ConfigFile(BaseModel):
    """The config file's schema; unknown keys are refused so that a typo is not silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    context_tokens: PositiveInt | None = None
    pg_schema: str | None = Field(default=None, alias="schema")
    """``schema`` in the file: the PostgreSQL schema of the tables (``--schema`` and ``$STELLATE_SCHEMA`` win)."""
    profiles: dict[str, ProfileEntry] = {}
    skills_dir: str | None = None
    """A folder of ``SKILL.md`` folders for the sessions of ``stellate serve`` (``--skills`` wins)."""
    reflector: ReflectorEntry | None = None

    prices: dict[str, PriceEntry] = {}
    """Model (or ``provider/model``) -> price per million tokens; none built in."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderFlags:
    """Provider options given on the command line (the highest layer)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None


def schema_name(flag: str | None, env: Mapping[str, str], file: ConfigFile) -> str | None:
    """The PostgreSQL schema: ``--schema``, else ``$STELLATE_SCHEMA``, else the config file's ``schema``."""
    return flag or env.get("STELLATE_SCHEMA") or file.pg_schema or None


def load_config(flag: str | None, env: Mapping[str, str]) -> ConfigFile:
    """Read the config file; the default one may be absent.

    Raises:
        UsageError: ``config_invalid`` when a named file is missing, or any file is not valid.
    """
    path, explicit = config_path(flag, env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if not explicit:
            return ConfigFile()
        raise UsageError(f"config file {path} does not exist", code="config_invalid") from exc
    except OSError as exc:
        raise UsageError(f"cannot read config file {path}: {exc.strerror}", code="config_invalid") from exc
    try:
        return ConfigFile.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}", code="config_invalid") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"config file {path}: {problems}", code="config_invalid") from exc


def resolve_provider(flags: ProviderFlags, env: Mapping[str, str], file: ConfigFile) -> ProviderSettings:
    """Merge the three layers: flag > environment > file.

    With no provider named anywhere, a provider whose API-key variable is set is used (the first of
    ``openai``, ``deepseek``, ``anthropic``).
    """
    from stellate.cli.providers import PROVIDERS, ProviderSettings  # the LLM layer: only for commands that call one

    provider = flags.provider or env.get("STELLATE_PROVIDER") or file.provider or _provider_from_keys(env)
    spec = PROVIDERS.get(provider or "")
    vendor_key = env.get(spec.key_env) if spec is not None and spec.key_env else None
    return ProviderSettings(
        provider=provider,
        model=flags.model or env.get("STELLATE_MODEL") or file.model,
        base_url=flags.base_url or env.get("STELLATE_BASE_URL") or file.base_url,
        api_key=env.get("STELLATE_API_KEY") or vendor_key or file.api_key,
        context_tokens=_positive_int(env, "STELLATE_CONTEXT_TOKENS") or file.context_tokens,
        script=env.get("STELLATE_SCRIPT"),
    )


def _provider_from_keys(env: Mapping[str, str]) -> str | None:
    from stellate.cli.providers import PROVIDERS

    return next((name for name, spec in PROVIDERS.items() if spec.key_env and env.get(spec.key_env)), None)


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if not raw:
        return None
    if not raw.isdigit() or int(raw) == 0:
        raise UsageError(f"{name} must be a positive whole number of tokens, not {raw!r}", code="config_invalid")
    return int(raw)


#: Profiles offered when the config file defines none.
DEFAULT_PROFILES: dict[str, ProfileEntry] = {
    "researcher": ProfileEntry(
        system_prompt="You are a research assistant: analyse the question in depth and cite what you rely on.",
        mode="prepend",
        context="inherit",
        description="digs into one question with this conversation's history",
    ),
    "expert": ProfileEntry(
        system_prompt="You are an expert in ${topic}. Answer precisely and say what you are unsure of.",
        mode="preset",
        description="an expert in vars.topic, starting fresh",
    ),
}


def fork_profiles(file: ConfigFile) -> dict[str, ForkProfile]:
    """The fork profiles of the config file (or `DEFAULT_PROFILES`)."""
    entries = file.profiles or DEFAULT_PROFILES
    return {name: _fork_profile(entry) for name, entry in entries.items()}


def _fork_profile(entry: ProfileEntry) -> ForkProfile:
    from stellate.engine import ForkProfile  # the engine: only for commands that build an agent

    template = entry.system_prompt
    prompt_fn = None
    if template is not None and "$" in template:

        def prompt_fn(variables: Mapping[str, str]) -> str:
            return string.Template(template).safe_substitute(variables)

    return ForkProfile(
        system_prompt=template,
        system_prompt_fn=prompt_fn,
        system_prompt_mode=entry.mode,
        context=entry.context,
        prompt=entry.prompt,
        description=entry.description,
        skills=entry.skills,
        llm=entry.model,  # registered under its own name by the command (`profile_models`)
        tools=entry.tools,
    )


def profile_models(file: ConfigFile) -> list[str]:
    """The models the config file's profiles name, each to be registered as an adapter under its own name."""
    return sorted({entry.model for entry in file.profiles.values() if entry.model})
