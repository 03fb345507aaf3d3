"""What the config file's profiles refer to by name: the models they call and the skills they may use.

A profile names a model of the configured provider (``model = "qwen2.5-7b"``); the command builds that
adapter and registers it under the same name, so a fork made with the profile records the name and keeps
its model across restarts. Skills come from a folder of ``SKILL.md`` folders (``--skills`` or
``skills_dir``); a profile's ``skills`` list is a whitelist over them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from stellate.cli.settings import ConfigFile, profile_models

if TYPE_CHECKING:
    from stellate.cli.providers import ProviderSettings
    from stellate.engine import SkillSet
    from stellate.llm import LLMAdapter

__all__ = ["profile_adapters", "skill_set"]


def profile_adapters(file: ConfigFile, settings: ProviderSettings) -> dict[str, LLMAdapter]:
    """An adapter per model the profiles name, of the configured provider (a stand-in that refuses calls without one).

    Raises:
        UsageError: ``config_invalid`` or ``missing_extra``, as `stellate.cli.providers.build_adapter`.
    """
    from stellate.cli.providers import adapter_or_placeholder

    return {
        model: adapter_or_placeholder(dataclasses.replace(settings, model=model))[0] for model in profile_models(file)
    }


def skill_set(flag: str | None, file: ConfigFile) -> SkillSet | None:
    """The skills of ``--skills DIR``, else of the config file's ``skills_dir``; None when neither is given.

    Raises:
        UsageError: the folder does not exist, or two skills share a name.
        FormatError: a ``SKILL.md`` is not valid.
    """
    from stellate.engine import load_skills

    folder = flag or file.skills_dir
    return load_skills(folder) if folder else None
