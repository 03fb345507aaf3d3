"""Fork orchestration: a fork's plan (profiles, merge chain, split guard), its context, the child, the record.

The caller holds the source's lock (`Agent.fork_session`, or a tool forking from inside a turn). A fork reads
no more of the source than it needs: with context ``none`` or ``inherit`` a source the agent does not have live
is opened from its record alone, so the fork costs the same whatever the length of the source's history.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from stellate import observability
from stellate.agent.bus import EventBus
from stellate.agent.runtime import frozen_config, overlay
from stellate.agent.sessions import AgentSettings, SessionCache
from stellate.engine.config import ForkOptions, SessionConfig
from stellate.engine.events import SessionForked
from stellate.engine.forks import SplitGuard, plan_fork
from stellate.errors import ForkError, NotFoundError
from stellate.log.events import make_event
from stellate.session.prompts import default_compress_fn
from stellate.session.session import Session
from stellate.store import BaseStore, SessionId, SessionRecord

__all__ = ["ForkSettings", "Forker"]

_log = observability.get_logger(__name__)


class ForkSettings(AgentSettings, Protocol):
    """The agent's settings a fork reads (at each fork)."""

    split_guard: SplitGuard | None


class Forker:
    """Makes the forks of one agent.

    Args:
        settings: The agent whose defaults, profiles and split guard plan each fork.
        sessions: The agent's live sessions (a live source lends its fold to the child).
        events: Where `SessionForked` is published.
        store: Opens (or returns) the agent's store.
    """

    def __init__(
        self,
        settings: ForkSettings,
        *,
        sessions: SessionCache,
        events: EventBus,
        store: Callable[[], Awaitable[BaseStore]],
    ) -> None:
        self._settings = settings
        self._sessions = sessions
        self._events = events
        self._store = store

    async def fork(self, source_id: str, options: ForkOptions, *, in_turn: bool = False) -> SessionRecord:
        """Fork a child from ``source_id`` and return its record.

        A fork never waits for a turn running on the source (here or elsewhere): the child is cut at a completed
        turn of the log as stored, and the source's ``session/forked`` record is placed at its head beside the
        turn. With ``in_turn`` the fork comes from a tool inside the source's own running turn (the caller
        holds the source's lock), and that record is part of the turn's own writes.

        Raises:
            ForkError: ``source_not_found``, ``profile_not_found``, ``split_rejected``, ``child_exists``,
                ``fork_unavailable``, ``invalid_boundary``.
            ArchivedError: the source is archived.
            NotFoundError: the topology parent does not exist.
        """
        context = options.context if isinstance(options.context, str) or options.context is None else "function"
        with observability.fork_span(source_id, context=context or "none", profile=options.profile) as span:
            child = await self._fork_traced(source_id, options, in_turn)
            span.record({"stellate.fork.child_id": child.id, "stellate.fork.inherited": child.inherited})
            _log.info("forked %s into %s", source_id, child.id)
        return child

    async def _fork_traced(self, source_id: str, options: ForkOptions, in_turn: bool) -> SessionRecord:
        settings = self._settings
        source = await self._source(source_id)
        source.writer.check_writable()
        if options.profile is not None and options.profile not in settings.registries.profiles:
            plan_fork(
                source_id=source_id,
                defaults=settings.defaults,
                parent=SessionConfig(),
                profiles=settings.registries.profiles,
                options=options,
            )
        if settings.split_guard is not None:
            source = await self._loaded(source)  # the guard needs the turn of the last fork, folded from the log
            history = source.history
            settings.split_guard.check(turn_count=history.cursor.last_turn, last_fork_turn=history.last_fork_turn)
        parent = SessionConfig(system_prompt=source.system_prompt, skills=source.history.slots.config.get("skills"))
        plan = plan_fork(
            source_id=source_id,
            defaults=settings.defaults,
            parent=parent,
            profiles=settings.registries.profiles,
            options=options,
        )
        await (await self._store()).get_session(SessionId(plan.topology_parent_id))
        system_prompt, context = plan.config.system_prompt, plan.context
        if context not in ("none", "inherit"):
            source = await self._loaded(source)  # compressing or selecting messages reads the transcript
        if context == "compress":
            system_prompt, context = await self._compressed_context(source, plan.config), "none"
        config = overlay(plan.config, None, system_prompt)
        self._sessions.runtime(config)  # an unknown adapter name fails here, before anything is written
        child = await source.fork_record(
            label=options.label,
            context=context,
            prompt=plan.prompt,
            system_prompt=system_prompt,
            session_id=SessionId(options.session_id) if options.session_id else None,
            parent_id=SessionId(plan.topology_parent_id),
            config=frozen_config(
                config,
                settings.registries,
                profile=plan.profile,
                profile_vars=options.profile_vars,
                sources=plan.sources,
            ),
            at_seq=options.at_seq,
            boundary=options.boundary,
        )
        if source.history.transcript_loaded:
            # Open the child from the source's fold now, before the source's log moves on: it then reads only its
            # own few events, and its first turn costs the same whatever the length of the inherited history.
            self._sessions.remember(await source.open_child(child, self._sessions.runtime(config)), config)
        else:
            self._sessions.remember_config(child.id, config)  # opened on first use, from its source's segments
        forked = [make_event("session/forked", {"child_id": child.id, "turn": source.history.cursor.last_turn})]
        if in_turn:
            await source.writer.write(forked, check_writable=False)
        else:
            await source.writer.write_free(forked, check_writable=False)
        await self._events.publish(
            SessionForked(
                session_id=child.id,
                source_id=source_id,
                parent_id=plan.topology_parent_id,
                label=options.label,
                profile=plan.profile,
            )
        )
        return child

    async def wait_for_turn(self, source_id: str, wait: float, *, owner: str) -> None:
        """Return once no turn runs on the source (its lease is free), waiting up to ``wait`` seconds.

        Raises:
            ForkError: ``source_not_found``.
            SessionBusyError: a turn still runs there after ``wait`` seconds.
        """
        store = await self._store()
        try:
            lease, _ = await store.acquire_lease(SessionId(source_id), owner=owner, wait=wait)
        except NotFoundError as exc:
            raise ForkError(f"fork source {source_id!r} does not exist", code="source_not_found") from exc
        await store.release_lease(SessionId(source_id), lease)

    async def _compressed_context(self, source: Session, config: SessionConfig) -> str | None:
        messages = await source.messages()
        prompt = config.system_prompt
        if not messages:
            return prompt
        llm = self._settings.registries.resolve_llm(config.llm)
        compress = config.compress_fn or default_compress_fn(llm, self._settings.language)
        summary = await compress(messages)
        return f"{prompt or ''}\n\n<parent_context>\n{summary}\n</parent_context>".lstrip("\n")

    async def _source(self, source_id: str) -> Session:
        """The fork source: the live session if this agent has it, else one opened from its record alone (O(1)).

        A fork in a fresh process (``stellate sessions fork``, a stateless worker) then costs the same whatever
        the source's history; only the split guard and the compress and select contexts load the transcript.
        """
        if self._sessions.cached(source_id) is not None:
            return await self._sessions.get(source_id)
        store = await self._store()
        try:
            record = await store.get_session(SessionId(source_id))
        except NotFoundError as exc:
            raise ForkError(f"fork source {source_id!r} does not exist", code="source_not_found") from exc
        config = self._sessions.config_of_record(record)
        return Session.for_fork(store, record, self._sessions.runtime(config))

    async def _loaded(self, source: Session) -> Session:
        return source if source.history.transcript_loaded else await self._sessions.get(source.id)
