"""The `Agent` facade: a forest of sessions, their turns, forks, memory and insights.

Every writing operation on a session (turn, stream, fork, explicit consolidation, archive) holds that
session's lock, so they never interleave; different sessions run in parallel. A fork the model asks for
from inside a running turn passes through its own session's lock instead of deadlocking. Scheduled
consolidation runs beside the turns (it only appends a memory event) and reports failures as events.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from stellate.agent._locks import SessionLocks
from stellate.agent.approvals import AgentApprovals, refuse_paused
from stellate.agent.branches import AgentBranches
from stellate.agent.bus import EventBus, Hook
from stellate.agent.consolidation import Consolidator
from stellate.agent.erasing import AgentErasure
from stellate.agent.forking import Forker
from stellate.agent.image_store import AgentImages
from stellate.agent.images import ImagePolicy, ImageSource, load_images
from stellate.agent.prices import Price
from stellate.agent.reading import AgentReads
from stellate.agent.reflecting import reflect
from stellate.agent.reflector import Reflection, Reflector
from stellate.agent.relay import EventRelay
from stellate.agent.runtime import BUILTIN_TOOLS, Registries, frozen_config, overlay
from stellate.agent.searching import AgentSearch
from stellate.agent.sessions import SessionCache
from stellate.agent.topology import SessionDigest
from stellate.agent.turn_notices import turn_error, waiting_notice
from stellate.agent.usage_report import AgentUsage
from stellate.engine.approval import Approval, ApprovalPolicy
from stellate.engine.config import ForkOptions, ForkProfile, SessionConfig
from stellate.engine.events import (
    AgentEvent,
    SessionArchived,
    SessionCreated,
    TextChunk,
    TurnEvent,
    TurnFinished,
    TurnResult,
)
from stellate.engine.forks import SplitGuard
from stellate.engine.mcp import MCPServers, MCPServerSpec
from stellate.engine.runner import DEFAULT_MAX_ROUNDS, TurnRunner
from stellate.engine.skills import SkillSet
from stellate.engine.tools import Tool, ToolRegistry
from stellate.errors import SessionBusyError, UsageError
from stellate.llm.types import LLMAdapter
from stellate.log.images import ImageRef
from stellate.session.output import OutputContract, as_contract
from stellate.session.session import Session
from stellate.session.types import Durability, Language
from stellate.store import BaseStore, SessionId, open_store
from stellate.store.leases import DEFAULT_LEASE_TTL, lease_owner
from stellate.store.signals import LocalSignals

__all__ = ["Agent"]

DEFAULT_STORE = "sqlite:///stellate.db"


class Agent(AgentReads, AgentBranches, AgentErasure, AgentApprovals, AgentSearch, AgentUsage, AgentImages):
    """Branching conversations over a store.

    Args:
        store: A store, or its URL (``sqlite:///file.db`` by default, ``memory://``, ``postgresql://...``);
            a URL is opened on first use.
        llm: Shortcut for ``defaults=SessionConfig(llm=...)``.
        defaults: Lowest layer of the merge chain.
        profiles: Fork profiles by name.
        tools: Tools sessions may call (all of them unless a session's config names a subset).
        skills: Skills for ``activate_skill``.
        adapters: Adapters by name, so sessions can record and find their model again after a restart.
        builtin_tools: Built-ins to offer: ``create_session``, ``activate_skill`` (opt-in).
        split_guard: Refuses forks from sessions too young or forked too recently (off by default).
        consolidate_every: Consolidate a session's memory every N turns, in the background.
        consolidate_on_archive: Consolidate before archiving.
        reflector: Enables `Agent.reflect`.
        max_rounds: Model calls allowed per turn.
        language: Language of built-in texts (``en`` or ``zh``).
        durability: ``step`` (store the user message before each model call) or ``turn`` (one write per turn).
        busy_timeout: Seconds a turn (or archive) waits while another writer — another process or agent on
            the same store — runs a turn on the session, before `SessionBusyError`; 0 fails at once.
        lease_ttl: Seconds a session's lease lasts unless renewed (every third of it while a turn runs): how
            long a session stays blocked after its writer died mid-turn.
        mcp_servers: MCP servers by name (`MCPStdio`, `MCPHTTP`), whose tools join ``tools``; started on first
            use, stopped by `close`.
        share_events: Send this agent's events to the agents of other processes on the same store and space, and
            theirs to this agent's subscribers (text chunks of their running turns included). None: on when the
            store carries signals between processes (PostgreSQL).
        approvals: Tools whose calls wait for a person's approval, by name (Python, MCP and built-in tools
            alike): an `Approval` each (``True`` for one that always asks, never times out).
        prices: Price table for `usage_report` (model or ``provider/model`` -> `Price`); none built in.
    """

    def __init__(
        self,
        store: BaseStore | str = DEFAULT_STORE,
        *,
        llm: LLMAdapter | str | None = None,
        defaults: SessionConfig | None = None,
        profiles: Mapping[str, ForkProfile] | None = None,
        tools: Iterable[Tool] = (),
        skills: SkillSet | None = None,
        adapters: Mapping[str, LLMAdapter] | None = None,
        builtin_tools: Collection[str] = (),
        split_guard: SplitGuard | None = None,
        consolidate_every: int | None = None,
        consolidate_on_archive: bool = True,
        reflector: Reflector | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        language: Language = "en",
        durability: Durability = "step",
        busy_timeout: float = 30.0,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        mcp_servers: Mapping[str, MCPServerSpec] | MCPServers | None = None,
        share_events: bool | None = None,
        approvals: Mapping[str, Approval | bool] | None = None,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        unknown = set(builtin_tools) - set(BUILTIN_TOOLS)
        if unknown:
            raise UsageError(f"unknown built-in tool(s) {sorted(unknown)}; choose from {list(BUILTIN_TOOLS)}")
        if consolidate_every is not None and consolidate_every < 1:
            raise UsageError("consolidate_every must be a positive number of turns")
        if busy_timeout < 0 or lease_ttl <= 0:
            raise UsageError("busy_timeout must be >= 0 seconds and lease_ttl > 0 seconds")
        self._store_or_url = store
        self._store: BaseStore | None = store if isinstance(store, BaseStore) else None
        base = defaults or SessionConfig()
        self.defaults = SessionConfig(
            system_prompt=base.system_prompt,
            llm=llm if llm is not None else base.llm,
            tools=base.tools,
            skills=base.skills,
            consolidate_fn=base.consolidate_fn,
            compress_fn=base.compress_fn,
        )
        self.registries = Registries(
            adapters=dict(adapters or {}),
            tools=ToolRegistry(tools),
            profiles=dict(profiles or {}),
            skills=skills or SkillSet.from_skills(()),
            builtins=tuple(builtin_tools),
        )
        self.approvals = ApprovalPolicy(approvals)
        """The tools whose calls wait for approval (see `stellate.engine.approval`)."""
        self.mcp = mcp_servers if isinstance(mcp_servers, MCPServers) else MCPServers(mcp_servers)
        """The MCP servers whose tools this agent offers (``agent.mcp.add(name, spec)`` registers one more)."""
        self.split_guard = split_guard
        self.consolidate_on_archive = consolidate_on_archive
        self.reflector = reflector
        self.max_rounds = max_rounds
        self.language: Language = language
        self.durability: Durability = durability
        self.busy_timeout = busy_timeout
        self.lease_ttl = lease_ttl
        self.prices = dict(prices or {})
        self.owner = lease_owner(f"agent-{uuid.uuid4().hex[:8]}")
        """Names this agent in the leases it takes (host, process id and a per-agent id)."""
        self.image_policy = ImagePolicy()
        """What ``turn(images=...)`` accepts: size limit, URL timeout, whether and where files are read."""
        self.events = EventBus()
        self._consolidator = Consolidator(
            store=self.store, events=self.events, owner=self.owner, every=consolidate_every
        )
        self._locks = SessionLocks()
        self._sessions = SessionCache(self, store=self.store)
        self._forks = Forker(self, sessions=self._sessions, events=self.events, store=self.store)
        self._open_lock = asyncio.Lock()
        self._share_events = share_events
        self._relay: EventRelay | None = None
        if self._store is not None:
            self._connect_relay(self._store)

    @property
    def consolidate_every(self) -> int | None:
        """Consolidate a session's memory every N turns in the background (None: off)."""
        return self._consolidator.every

    # -- lifecycle -------------------------------------------------------------------------------

    async def store(self) -> BaseStore:
        """The store, opened on first use."""
        if self._store is None:
            async with self._open_lock:
                if self._store is None:
                    assert isinstance(self._store_or_url, str)
                    self._store = await open_store(self._store_or_url)
                    self._connect_relay(self._store)
        return self._store

    def _connect_relay(self, store: BaseStore) -> None:
        shared = self._share_events
        if shared is None:
            shared = not isinstance(store.signals, LocalSignals)
        if shared:
            self._outbox().share()

    def _outbox(self) -> EventRelay:
        if self._relay is None:
            self._relay = EventRelay(owner=self.owner, store=self.store, bus=self.events)
            self.events.add_hook(self._relay.send)
        return self._relay

    def record_history(self) -> None:
        """Keep this agent's events (all but text chunks) in the store's event history from now on; idempotent.

        The server does it for every space's agent: ``/v1/events`` serves that history and resumes from it.
        """
        self._outbox().record_history()

    async def events_recorded(self) -> None:
        """Return once the events published so far are in the event history (see `record_history`)."""
        if self._relay is not None:
            await self._relay.flushed()

    async def text_chunks(self) -> AsyncIterator[tuple[int | None, TextChunk]]:
        """Text chunks of running turns, each with the history id of the newest kept event published before it.

        This agent's, and (with ``share_events``) other processes'; see `stellate.agent.relay.EventRelay.texts`.
        """
        if self._relay is not None:
            async for item in self._relay.texts():
                yield item
            return
        async for event in self.events.subscribe(["text"]):
            if isinstance(event, TextChunk):
                yield None, event

    async def close(self) -> None:
        """Wait for background consolidations, then close the store (if the agent opened it)."""
        await self._consolidator.close()
        await self.mcp.close()
        if self._relay is not None:
            await self._relay.close()
        if self._store is not None and isinstance(self._store_or_url, str):
            await self._store.close()
            self._store = None
        self._sessions.clear()

    async def __aenter__(self) -> Agent:
        await self.store()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- sessions --------------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        label: str = "",
        system_prompt: str | None = None,
        session_id: str | None = None,
        config: SessionConfig | None = None,
    ) -> SessionDigest:
        """Create a root session (a new tree of the forest).

        Args:
            label: Display name, also shown to the model as the session's identity.
            system_prompt: Overrides the defaults' prompt.
            session_id: Id to use (default: a new one).
            config: Per-session settings over the defaults (llm, tools, skills...).
        """
        store = await self.store()
        layered = overlay(self.defaults, config, system_prompt)
        runtime = self._sessions.runtime(layered)
        frozen = frozen_config(layered, self.registries)
        session = await Session.create(
            store,
            runtime,
            label=label,
            system_prompt=layered.system_prompt,
            session_id=SessionId(session_id) if session_id else None,
            config=frozen,
        )
        self._sessions.remember(session, layered if config is not None else None)
        await self.events.publish(SessionCreated(session_id=session.id, label=label))
        return await self.get_session_digest(session.id)

    async def fork_session(
        self,
        source_id: str,
        options: ForkOptions | None = None,
        *,
        wait_for_turn: float | None = None,
        **fields: Any,
    ) -> SessionDigest:
        """Fork a child from ``source_id`` (``options`` or its fields as keywords, e.g. ``label=...``).

        A turn running on the source (here, in another process or on another worker) never delays the fork: the
        child is cut at a completed turn as stored (the anchored one, or the last one); the turn goes on.
        ``wait_for_turn`` (seconds) waits for that turn to end first, so the child holds the newest turn.

        Raises:
            ForkError: ``source_not_found``, ``profile_not_found``, ``split_rejected``, ``child_exists``,
                ``fork_unavailable``, ``invalid_boundary``.
            ArchivedError: the source is archived.
            NotFoundError: the topology parent does not exist.
            SessionBusyError: the source's turn still ran after ``wait_for_turn`` seconds.
        """
        options = options if options is not None else ForkOptions(**fields)
        if wait_for_turn is not None:
            await self._forks.wait_for_turn(source_id, wait_for_turn, owner=self.owner)
        child = await self._forks.fork(source_id, options)
        return await self.get_session_digest(child.id)

    async def archive_session(self, session_id: str, *, busy_timeout: float | None = None) -> None:
        """Make a session read-only (consolidating its memory first when configured); archiving twice is harmless.

        A turn running on the session elsewhere is waited for, up to ``busy_timeout`` seconds (the agent's
        by default), then `SessionBusyError`.
        """
        async with self._locks.hold(session_id):
            session = await self._session(session_id, fresh=False)
            async with session.hold(wait=self.busy_timeout if busy_timeout is None else busy_timeout):
                if session.is_archived:
                    return
                if self.consolidate_on_archive and self._consolidator.has_unconsolidated_turns(session):
                    await self._consolidator.consolidate_reporting(session)
                await session.archive()
        await self.events.publish(SessionArchived(session_id=session_id))

    # -- turns -----------------------------------------------------------------------------------

    async def turn(
        self,
        session_id: str,
        content: str,
        *,
        busy_timeout: float | None = None,
        output_type: type[Any] | OutputContract[Any] | None = None,
        images: Sequence[ImageSource] = (),
    ) -> TurnResult:
        """Run one turn (the model, and the tools it calls, until it answers) and return its result.

        Args:
            session_id: The session.
            content: The user's message.
            busy_timeout: Seconds to wait while another writer (another process, or another agent) runs a
                turn on this session; the agent's ``busy_timeout`` when None, 0 to fail at once.
            output_type: Ask for a structured answer of this type (a pydantic model, a dataclass...; or an
                `OutputContract` for the mode and retries); ``TurnResult.output`` then holds the validated object.
            images: Images sent with the message: bytes, file paths or ``http(s)`` URLs, checked against
                ``image_policy`` before anything is written, stored once (by sha256) beside the log.

        Raises:
            SessionBusyError: the session was still busy after ``busy_timeout`` (retryable).
            UsageError: an image is refused (``not_an_image``, ``image_too_large``, ``image_path_refused``,
                ``image_unreachable``).
            LLMError: the session's model cannot see images (``images_unsupported``).
            OutputValidationError: the structured answer stayed invalid after the allowed retries.
        """
        result: TurnResult | None = None
        stream = self.stream(session_id, content, busy_timeout=busy_timeout, output_type=output_type, images=images)
        async for event in stream:
            if isinstance(event, TurnFinished):
                result = event.result
        assert result is not None  # a turn always ends with TurnFinished or raises
        return result

    async def stream(
        self,
        session_id: str,
        content: str,
        *,
        busy_timeout: float | None = None,
        output_type: type[Any] | OutputContract[Any] | None = None,
        images: Sequence[ImageSource] = (),
    ) -> AsyncIterator[TurnEvent]:
        """Run one turn, yielding its events as they happen; the last one is `TurnFinished`.

        The turn runs in a task of its own: closing the iterator early (``break``, an exception, or
        ``aclose()``) aborts it cleanly (``turn/end {aborted}``) and frees the session. Arguments and errors
        are those of `turn`; with ``output_type``, an `OutputReady` event carries the validated object just
        before `TurnFinished`.
        """
        contract = as_contract(output_type)
        refs = await load_images(images, self.image_policy)
        queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()
        runner = asyncio.get_running_loop().create_task(
            self._run_turn(session_id, content, busy_timeout, queue, contract, refs)
        )
        try:
            while (event := await queue.get()) is not None:
                yield event
            await runner  # raises what ended the turn, if anything
        finally:
            if not runner.done():
                runner.cancel()
                await asyncio.wait([runner])

    async def _run_turn(
        self,
        session_id: str,
        content: str,
        busy_timeout: float | None,
        queue: asyncio.Queue[TurnEvent | None],
        output: OutputContract[Any] | None = None,
        images: Sequence[ImageRef] = (),
    ) -> None:
        try:
            async with self._locks.hold(session_id):
                session = await self._session(session_id, fresh=False)
                wait = self.busy_timeout if busy_timeout is None else busy_timeout

                async with session.hold(
                    wait=wait, until_turn_end=True, on_wait=waiting_notice(queue, session_id, wait)
                ):
                    await self.settle_held(session)  # as stored now: a passed deadline resumes a paused turn first
                    refuse_paused(session)
                    tools = await self._tools_for(session)
                    runner = TurnRunner(
                        session, tools, agent=self, max_rounds=self.max_rounds, approvals=self.approvals
                    )
                    async for event in runner.run(content, output=output, images=images):
                        await self.events.publish(event)
                        queue.put_nowait(event)
            self._consolidator.schedule(session)
        except Exception as exc:
            if not isinstance(exc, SessionBusyError):  # a turn that ran and failed: watchers elsewhere learn of it
                await self.events.publish(turn_error(session_id, exc))
            raise
        finally:
            queue.put_nowait(None)

    async def _tools_for(self, session: Session) -> ToolRegistry:
        return await self._tools_of(self._sessions.config_of(session))

    async def _tools_of(self, config: SessionConfig) -> ToolRegistry:
        if self.mcp:
            reserved = [*self.registries.tools.names(), *self.registries.builtins]
            self.registries.remote = list(await self.mcp.tools(reserved))
        return self.registries.session_tools(config, self._fork_from_tool)

    async def _fork_from_tool(self, source_id: str, options: ForkOptions) -> str:
        async with self._locks.hold(source_id):
            return (await self._forks.fork(source_id, options, in_turn=True)).id

    # -- reflection ------------------------------------------------------------------------------

    async def reflect(self, *, synthesis_session_id: str | None = None) -> Reflection:
        """Ask the reflector for a synthesis of every active session's memory and targeted insights.

        The insights (and the synthesis, as the memory of ``synthesis_session_id`` if given) are written in
        one transaction; insights for unknown or archived sessions are dropped.
        """
        return await reflect(self, synthesis_session_id)

    # -- events ----------------------------------------------------------------------------------

    def add_hook(self, hook: Hook, *, types: Collection[str] | None = None) -> Callable[[], None]:
        """Call ``hook(event)`` for every event (or those of ``types``); returns a remover."""
        return self.events.add_hook(hook, types=types)

    async def subscribe(self, types: Collection[str] | None = None) -> AsyncIterator[AgentEvent]:
        """Iterate over events published from now on (by other processes too, with ``share_events``)."""
        if self._relay is not None:
            await self._relay.start_receiving()
        async for event in self.events.subscribe(types):
            yield event

    # -- sessions --------------------------------------------------------------------------------

    async def _session(self, session_id: str, *, fresh: bool = True) -> Session:
        """The session, from the cache when it is there (caught up with the store unless ``fresh`` is False)."""
        return await self._sessions.get(session_id, fresh=fresh)
