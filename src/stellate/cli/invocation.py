"""One run of the command: its parsed arguments, its consoles, its environment, and what they resolve to."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stellate.cli.database import Database
from stellate.cli.locations import config_path, database_location

if TYPE_CHECKING:
    from stellate.agent import Agent, Reflector
    from stellate.cli.console import Consoles
    from stellate.cli.providers import ProviderSettings
    from stellate.cli.settings import ConfigFile
    from stellate.llm import LLMAdapter
    from stellate.store import BaseStore

# The agent, the providers and the config file's schema are imported by the methods that need them: a command
# that only reads the store (``sessions list``) starts without them (issue 22).

__all__ = ["Invocation"]


@dataclass(slots=True)
class Invocation:
    """What a command handler gets."""

    args: argparse.Namespace
    consoles: Consoles
    env: Mapping[str, str]
    _config: ConfigFile | None = field(default=None, repr=False)

    def option(self, name: str) -> str | None:
        """A string option, or None when it was not given (options shared by all commands may be absent)."""
        value = getattr(self.args, name, None)
        return value if isinstance(value, str) else None

    def database(self) -> Database:
        """The database: ``--db``, ``$STELLATE_DB`` or ``./stellate.db``; its PostgreSQL schema (`schema_name`)."""
        schema = self.option("schema") or self.env.get("STELLATE_SCHEMA")
        if schema is None and config_path(self.option("config"), self.env)[0].is_file():
            from stellate.cli.settings import schema_name  # the config file's schema (read with pydantic)

            schema = schema_name(None, self.env, self.config())
        return Database.from_env(database_location(self.option("db"), self.env), self.env, schema=schema)

    def config(self) -> ConfigFile:
        """The config file (read once)."""
        if self._config is None:
            from stellate.cli.settings import load_config

            self._config = load_config(self.option("config"), self.env)
        return self._config

    def check_named_config(self) -> None:
        """Read a config file named by ``--config`` or ``$STELLATE_CONFIG`` now, whatever the command.

        A named file must exist (docs/cli.md), so every command refuses a missing or invalid one the same way,
        not only the commands that happen to need a setting from it.

        Raises:
            UsageError: ``config_invalid``.
        """
        if config_path(self.option("config"), self.env)[1]:
            self.config()

    def provider(self) -> ProviderSettings:
        """The provider settings: flag > environment > config file."""
        from stellate.cli.settings import ProviderFlags, resolve_provider

        flags = ProviderFlags(
            provider=self.option("provider"), model=self.option("model"), base_url=self.option("base_url")
        )
        return resolve_provider(flags, self.env, self.config())

    def agent(
        self,
        store: BaseStore,
        *,
        llm: LLMAdapter | None = None,
        builtin_tools: Collection[str] = (),
        configured: bool = True,
        consolidate_every: int | None = None,
        reflector: Reflector | None = None,
    ) -> Agent:
        """An agent on ``store`` with the configured profiles (their models and skills) and ``reflector``.

        Without ``llm`` it uses the configured provider if there is one, else a stand-in that refuses model
        calls; memory is then not consolidated on archive (there is no model to do it, as when ``configured``
        is false).
        """
        from stellate.agent import Agent
        from stellate.cli.approval_settings import approvals_from_env
        from stellate.cli.profile_parts import profile_adapters, skill_set
        from stellate.cli.providers import adapter_or_placeholder
        from stellate.cli.settings import fork_profiles
        from stellate.cli.usage import configured_prices

        if llm is None:
            llm, configured = adapter_or_placeholder(self.provider())
        return Agent(
            store,
            llm=llm,
            profiles=fork_profiles(self.config()),
            adapters=profile_adapters(self.config(), self.provider()),
            skills=skill_set(self.option("skills"), self.config()),
            reflector=reflector,
            builtin_tools=builtin_tools,
            consolidate_on_archive=configured,
            busy_timeout=self.database().busy_timeout,
            lease_ttl=self.database().lease_ttl,
            consolidate_every=consolidate_every,
            approvals=approvals_from_env(self.env),
            prices=configured_prices(self.config(), getattr(self.args, "price", ())),
        )

    @contextlib.asynccontextmanager
    async def open(
        self, *, create: bool = False, llm: LLMAdapter | None = None, builtin_tools: Collection[str] = ()
    ) -> AsyncIterator[tuple[BaseStore, Agent]]:
        """The database's store and an agent on it (see `agent`), both closed afterwards."""
        async with self.open_store(create=create) as store:
            agent = self.agent(store, llm=llm, builtin_tools=builtin_tools)
            try:
                yield store, agent
            finally:
                await agent.close()

    @contextlib.asynccontextmanager
    async def open_store(self, *, create: bool = False) -> AsyncIterator[BaseStore]:
        """The database's store alone, closed afterwards (for commands that only read it)."""
        from stellate.cli.database import open_database

        async with open_database(self.database(), create=create) as store:
            yield store
