"""The sessions an agent keeps live between calls, and the runtime each one is opened with.

A live session mirrors its log in memory, so its next turn never rereads the store. The cache is bounded
(`SESSION_CACHE_SIZE`): a session dropped from it is simply reopened from the store on its next use. So are the
configs kept beside it (`LIVE_CONFIG_CACHE_SIZE`), which only hold what a session's frozen config cannot give
back (issue 22).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from stellate.agent.runtime import Registries
from stellate.engine.config import SessionConfig
from stellate.session.prompts import default_compress_fn, default_consolidate_fn
from stellate.session.session import Session
from stellate.session.types import Durability, Language, SessionRuntime
from stellate.store import BaseStore, SessionId, SessionRecord

__all__ = ["LIVE_CONFIG_CACHE_SIZE", "SESSION_CACHE_SIZE", "AgentSettings", "SessionCache"]

#: Sessions whose in-memory history the agent keeps between calls.
SESSION_CACHE_SIZE = 256
#: Configs holding live objects (functions, adapters) that the agent keeps for sessions it opens later. A session
#: whose config was forgotten runs with what its frozen config names, as after a restart.
LIVE_CONFIG_CACHE_SIZE = 1024


class AgentSettings(Protocol):
    """The agent's settings a session's runtime is built from (read when a session is opened)."""

    defaults: SessionConfig
    registries: Registries
    language: Language
    durability: Durability
    owner: str
    lease_ttl: float
    busy_timeout: float


class SessionCache:
    """Live sessions by id, least recently used first, with the configs of those opened with live objects.

    Args:
        settings: The agent whose settings runtimes are built from.
        store: Opens (or returns) the agent's store.
    """

    def __init__(self, settings: AgentSettings, *, store: Callable[[], Awaitable[BaseStore]]) -> None:
        self._settings = settings
        self._store = store
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        # Configs holding live objects (functions, adapters) that the frozen config cannot give back, least
        # recently used first.
        self._live: OrderedDict[str, SessionConfig] = OrderedDict()

    async def get(self, session_id: str, *, fresh: bool = True) -> Session:
        """The session, from the cache when it is there.

        A cached session is caught up with the store unless ``fresh`` is False (taking its lease does it anyway).

        Raises:
            NotFoundError: unknown id.
        """
        cached = self._sessions.get(session_id)
        if cached is not None:
            self._sessions.move_to_end(session_id)
            if fresh and cached.lease is None:
                await cached.refresh()
            return cached
        store = await self._store()
        record = await store.get_session(SessionId(session_id))
        config = self.config_of_record(record)
        source = self._sessions.get(record.source_id) if record.source_id and record.inherited else None
        if source is not None and not record.cursor.turn_open:
            session = await source.open_child(record, self.runtime(config))  # reuses the source's fold
        else:
            session = await Session.load(store, record.id, self.runtime(config))
        self.remember(session, None)
        return session

    def cached(self, session_id: str) -> Session | None:
        """The cached session, as it stands (not caught up, not marked as used), or None."""
        return self._sessions.get(session_id)

    def remember(self, session: Session, config: SessionConfig | None) -> None:
        """Cache ``session`` as the most recently used, with ``config`` when it holds live objects."""
        # Bounded: a dropped session is simply reloaded from the store on its next use.
        self._sessions[session.id] = session
        self._sessions.move_to_end(session.id)
        if len(self._sessions) > SESSION_CACHE_SIZE:
            # A session whose lease this agent holds (a turn runs) stays: its turn and tools share the object.
            idle = [sid for sid, cached in self._sessions.items() if cached.lease is None]
            for sid in idle[: len(self._sessions) - SESSION_CACHE_SIZE]:
                del self._sessions[sid]
        if config is not None and config != self._rebuilt(session.history.slots.config):
            self.remember_config(session.id, config)

    def remember_config(self, session_id: str, config: SessionConfig) -> None:
        """Keep the config of a session not opened yet, for when it is (the least recently kept go first)."""
        live = self._live
        live[session_id] = config
        live.move_to_end(session_id)
        while len(live) > LIVE_CONFIG_CACHE_SIZE:
            live.popitem(last=False)

    def _rebuilt(self, frozen: Mapping[str, Any]) -> SessionConfig:
        return self._settings.registries.config_from_frozen(self._settings.defaults, frozen)

    def config_of(self, session: Session) -> SessionConfig:
        """The session's config: the live one it was opened with, else rebuilt from its frozen config."""
        return self._live.get(session.id) or self._rebuilt(session.history.slots.config)

    def config_of_record(self, record: SessionRecord) -> SessionConfig:
        """Like `config_of`, for a session known by its record."""
        return self._live.get(record.id) or self._rebuilt(record.slots.config)

    def runtime(self, config: SessionConfig) -> SessionRuntime:
        """The runtime a session with ``config`` is opened with.

        Raises:
            UsageError: no model is configured, or an unknown adapter name.
        """
        settings = self._settings
        llm = settings.registries.resolve_llm(config.llm)
        return SessionRuntime(
            llm=llm,
            compress_fn=config.compress_fn or default_compress_fn(llm, settings.language),
            consolidate_fn=config.consolidate_fn or default_consolidate_fn(llm, settings.language),
            language=settings.language,
            durability=settings.durability,
            lease_owner=settings.owner,
            lease_ttl=settings.lease_ttl,
            busy_timeout=settings.busy_timeout,
        )

    def clear(self) -> None:
        """Drop every cached session (their configs stay, for when they are reopened)."""
        self._sessions.clear()

    def forget(self, session_ids: Iterable[str]) -> None:
        """Drop sessions and their configs (erased ones, or ones whose stored lineage changed)."""
        for sid in session_ids:
            self._sessions.pop(sid, None)
            self._live.pop(sid, None)
