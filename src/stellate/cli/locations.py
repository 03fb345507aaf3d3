"""Where the command's database and config file are: flag, else environment, else the default.

Apart from `stellate.cli.settings` (which reads the config file with pydantic), so that a command finds its
database without building the config file's schema (issue 22).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["DEFAULT_CONFIG", "DEFAULT_DB", "config_path", "database_location"]

DEFAULT_DB = "stellate.db"
DEFAULT_CONFIG = "~/.config/stellate/config.toml"


def database_location(flag: str | None, env: Mapping[str, str]) -> str:
    """The database: ``--db``, else ``$STELLATE_DB``, else ``./stellate.db`` (a path, or a store URL)."""
    return flag or env.get("STELLATE_DB") or DEFAULT_DB


def config_path(flag: str | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file and whether it was named explicitly (an explicit file must exist)."""
    named = flag or env.get("STELLATE_CONFIG")
    return Path(named or DEFAULT_CONFIG).expanduser(), named is not None
