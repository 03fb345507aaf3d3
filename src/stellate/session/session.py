"""The Session primitive (seed 001): one conversation, one log, exactly one model call per `send`.

A `Session` mirrors its log in memory (`History`), so assembling the next context never rereads the
store. Writes go through its `SessionWriter` (`stellate.session.writer`), staged and committed in batches with
an expected-seq check: a turn costs two small transactions (one with ``durability="turn"``), whatever the
length of the history.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from stellate.errors import SessionBusyError, UsageError
from stellate.llm.types import TokenCounter
from stellate.log.events import make_event
from stellate.log.images import ImageRef
from stellate.log.messages import Message, SystemMessage
from stellate.session.context import build_context, summary_text
from stellate.session.estimates import PromptEstimator
from stellate.session.forks import copied_context, inherit_request, opening_events, refuse_existing
from stellate.session.history import History, load_history, load_history_at, store_new_segments
from stellate.session.images import SessionImages
from stellate.session.lease import LeaseHolder
from stellate.session.output import OutputContract, as_contract, send_structured
from stellate.session.prompts import default_compress_fn, default_consolidate_fn
from stellate.session.turn import Turn
from stellate.session.types import (
    CompressFn,
    ConsolidateFn,
    ForkContext,
    SendDone,
    SendResult,
    SessionRuntime,
    SessionStreamEvent,
)
from stellate.session.writer import SessionWriter
from stellate.store.base import BaseStore
from stellate.store.types import ForkRequest, Lease, SessionId, SessionRecord

__all__ = ["Session"]


_NO_TOOLS_TEXT = "No tools are available in a plain send(); this call was not run."


class Session:
    """A conversation backed by an append-only log. Create with `Session.create`, reopen with `Session.load`."""

    def __init__(self, store: BaseStore, record: SessionRecord, runtime: SessionRuntime) -> None:
        self.runtime = runtime
        self.estimator = PromptEstimator(runtime.token_counter, runtime.language)
        """Token estimates of the next call's prompt (internal: `Turn` calibrates it after each call)."""
        weigh, weigh_key = self.estimator.weigh, self.estimator.weigh_key
        history = History(inherited=record.inherited, weigh=weigh, weigh_key=weigh_key)
        lease = LeaseHolder(store, record.id, runtime)
        self.writer = SessionWriter(store, record, history, lease, weigh=weigh)
        """The session's write path (internal: `Turn` and the agent stage and commit events through it)."""
        self.images = SessionImages()
        """The session's image bytes (internal: `Turn` stores a turn's images and attaches them to each call)."""

    @property
    def store(self) -> BaseStore:
        """The store holding the session; setting it moves the session's reads and writes there (its `writer`'s too)."""
        return self.writer.store

    @store.setter
    def store(self, store: BaseStore) -> None:
        self.writer.store = store

    @property
    def record(self) -> SessionRecord:
        """Identity and lineage as stored (slots and cursor live in `history`)."""
        return self.writer.record

    @property
    def history(self) -> History:
        """The session's log as folded in memory (owned by `writer`, which keeps it equal to the store)."""
        return self.writer.history

    @property
    def counter(self) -> TokenCounter:
        """The token counter behind this session's estimates (caching: each message is counted once).

        Until a prompt nears a limit it is the byte bound (`ByteBoundCounter`); see `stellate.session.estimates`.
        """
        return self.estimator.counter

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    async def create(
        cls,
        store: BaseStore,
        runtime: SessionRuntime,
        *,
        label: str = "",
        system_prompt: str | None = None,
        session_id: SessionId | None = None,
        parent_id: SessionId | None = None,
        config: dict[str, object] | None = None,
    ) -> Session:
        """Create a root (or, with ``parent_id``, a child without inherited context)."""
        events = opening_events(label, system_prompt, config)
        record = await store.create_session(session_id=session_id, parent_id=parent_id, events=events)
        return await cls._open(store, record, runtime)

    @classmethod
    async def load(
        cls, store: BaseStore, session_id: SessionId, runtime: SessionRuntime, *, repair: bool = False
    ) -> Session:
        """Open an existing session. Opening only reads: a turn open in the log is shown as it stands.

        A turn left open by a dead writer is repaired by the next writer, when it takes the session's lease
        (see `hold`); ``repair=True`` does that now, and leaves a turn that a live writer runs alone.
        """
        session = await cls._open(store, await store.get_session(session_id), runtime)
        if repair and session.history.cursor.turn_open:
            with contextlib.suppress(SessionBusyError):
                async with session.hold(wait=0):
                    pass
        return session

    @classmethod
    async def _open(
        cls, store: BaseStore, record: SessionRecord, runtime: SessionRuntime, *, source: Session | None = None
    ) -> Session:
        """Open ``record``; with its fork ``source`` in memory, reuse the source's fold and read only own events."""
        session = cls(store, record, runtime)
        writer, estimator = session.writer, session.estimator
        if source is not None and source.history.next_seq == record.inherited and not source.writer.has_pending:
            writer.history = source.history.fork(weigh=estimator.weigh, weigh_key=estimator.weigh_key)
            writer.history.absorb(await store.read_events(record.id, start=record.inherited))
        else:  # from the stored fold segments, folding only the events after them
            writer.history = await load_history(store, record, weigh=estimator.weigh, weigh_key=estimator.weigh_key)
        await store_new_segments(store, record.id, writer.history)
        return session

    @classmethod
    def for_fork(cls, store: BaseStore, record: SessionRecord, runtime: SessionRuntime) -> Session:
        """A session opened from its record alone, without reading its log: O(1) whatever its length.

        It knows its cursor and slots, which is all `fork_record` (with context ``none`` or ``inherit``) and
        recording the fork need; its transcript is not loaded, so reading or sending raises `UsageError`.
        """
        session = cls(store, record, runtime)
        estimator = session.estimator
        session.writer.history = History.from_record(record, weigh=estimator.weigh, weigh_key=estimator.weigh_key)
        return session

    async def open_child(self, record: SessionRecord, runtime: SessionRuntime | None = None) -> Session:
        """Open a child forked from this session, reusing this session's history when the child inherits all of it."""
        return await Session._open(self.store, record, runtime or self.runtime, source=self)

    async def refresh(self) -> None:
        """Catch up with events other writers appended since this object last wrote."""
        await self.writer.refresh()

    # -- the lease: one writer per session, across processes --------------------------------------

    @property
    def lease(self) -> Lease | None:
        """The session's lease while this object holds it (inside `hold`), else None."""
        return self.writer.lease.current

    @contextlib.asynccontextmanager
    async def hold(
        self,
        *,
        wait: float | None = None,
        until_turn_end: bool = False,
        on_wait: Callable[[Lease | None], None] | None = None,
    ) -> AsyncIterator[Session]:
        """Be the session's only writer until the block ends, whatever other processes share the store.

        Takes the session's lease in the store (waiting up to ``wait`` seconds, the runtime's
        ``busy_timeout`` by default, for another writer's turn to end), renews it while the block runs and
        releases it at the end. On entry the in-memory log catches up with the store, and a turn that a dead
        writer left open (its lease lapsed) is repaired. Re-entering while held does nothing more. A turn
        takes the lease itself; hold it around several operations to take it once.

        Args:
            wait: Seconds to wait for another writer; the runtime's ``busy_timeout`` when None.
            until_turn_end: The block ends with the next turn: that turn's closing write gives the lease back
                in its own transaction (one write fewer), and nothing is written in the block after it.
            on_wait: Told once, with the other writer's lease, when taking the lease has to wait for it.

        Raises:
            SessionBusyError: another writer still holds the session after ``wait`` seconds.
        """
        if self.writer.lease.current is not None:
            yield self
            return
        record = await self.writer.lease.take(self.runtime.busy_timeout if wait is None else wait, on_wait)
        self.writer.lease.ends_with_turn = until_turn_end
        try:
            await self.writer.catch_up(record)
            yield self
        finally:
            await self.writer.lease.give_back()

    # -- identity and slots ----------------------------------------------------------------------

    @property
    def id(self) -> SessionId:
        """Session id."""
        return self.record.id

    @property
    def label(self) -> str:
        """Current label."""
        return self.history.slots.label

    @property
    def memory(self) -> str | None:
        """Current memory (read by the reflection layer; never sent to this session's model)."""
        return self.history.slots.memory

    @property
    def insight(self) -> str | None:
        """Pending insight, consumed by the next successful model call."""
        return self.history.slots.insight

    @property
    def system_prompt(self) -> str | None:
        """Current system prompt."""
        return self.history.slots.system_prompt

    @property
    def is_archived(self) -> bool:
        """Whether the session is archived (read-only)."""
        return self.history.slots.status == "archived"

    @property
    def compress_fn(self) -> CompressFn:
        """The summarizer in use (the runtime's, or the default built from the adapter)."""
        return self.runtime.compress_fn or default_compress_fn(self.runtime.llm, self.runtime.language)

    @property
    def consolidate_fn(self) -> ConsolidateFn:
        """The consolidator in use (the runtime's, or the default built from the adapter)."""
        return self.runtime.consolidate_fn or default_consolidate_fn(self.runtime.llm, self.runtime.language)

    async def set_system_prompt(self, content: str) -> None:
        """Replace the system prompt."""
        await self.writer.write_free([make_event("system_prompt/set", {"content": content})])

    async def set_label(self, label: str) -> None:
        """Rename the session; the identity line of the next call follows."""
        await self.writer.write_free([make_event("label/set", {"label": label})])

    async def put_memory(self, content: str) -> None:
        """Replace the memory."""
        await self.writer.write_free([make_event("memory/put", {"content": content})])

    async def put_insight(self, content: str) -> None:
        """Replace the pending insight (one-shot; consumed by the next successful call)."""
        await self.writer.write_free([make_event("insight/put", {"content": content})])

    async def clear_insight(self) -> None:
        """Drop the pending insight unread."""
        await self.writer.write_free([make_event("insight/cleared")])

    async def archive(self) -> None:
        """Make the session read-only; archiving twice is harmless. Waits for a running turn to end.

        Raises:
            SessionBusyError: another writer's turn still runs after the runtime's ``busy_timeout``.
        """
        async with self.hold():
            if not self.is_archived:
                await self.writer.write([make_event("session/archived")], check_writable=False)

    # -- conversation ----------------------------------------------------------------------------

    def turn(self, content: str, *, images: Sequence[ImageRef] = ()) -> Turn:
        """Open a turn for the engine's tool loop: ``async with session.turn("...") as turn: ...``.

        ``images`` (with their bytes attached, see `stellate.log.images.image_ref_of`) go with the user message.
        """
        return Turn(self, content, images)

    async def send(self, content: str, *, output_type: type[Any] | OutputContract[Any] | None = None) -> SendResult:
        """One user message, one model call, recorded as a complete turn.

        With ``output_type`` the answer must be of that type (``SendResult.output``); one call leaves no room
        for retries, so an invalid answer ends the turn with an error (``Agent.turn`` retries).

        Raises:
            UsageError: empty input, or too large for the model's window (code ``context_too_large``).
            ArchivedError: the session is archived.
            ProviderError, LLMError: the call failed; the turn is recorded with ``turn/end {error}``
                and the insight is kept for the next call.
            OutputValidationError: the structured answer did not validate.
        """
        contract = as_contract(output_type)
        async with self.turn(content) as turn:
            if contract is not None:
                return await send_structured(turn, contract)
            result = await turn.step()
            await _refuse_tools(turn, result)
        return result

    async def stream(self, content: str) -> AsyncIterator[SessionStreamEvent]:
        """Like `send`, yielding text and tool-call deltas as they arrive, then `SendDone`."""
        async with self.turn(content) as turn:
            async for event in turn.stream_step():
                yield event
                if isinstance(event, SendDone):
                    await _refuse_tools(turn, event.result)

    async def messages(self) -> list[Message]:
        """The transcript as the model would see it, summary first (as a system message) when compressed."""
        self.history.require_transcript()
        summary = self.history.fold.summary
        lead: list[Message] = [SystemMessage(content=summary_text(summary, self.runtime.language))] if summary else []
        return self.history.fold.messages(lead)

    def context(self) -> list[Message]:
        """The exact messages the next model call would get (without a new user message)."""
        return build_context(self.history, self.runtime.language)

    async def context_at(self, reply_seq: int) -> list[Message]:
        """Rebuild, from the log alone, the exact context that produced the assistant message at ``reply_seq``.

        Raises:
            UsageError: ``reply_seq`` is not an assistant message made inside a step.
        """
        past, reply = await load_history_at(self.store, self.record, reply_seq) if reply_seq >= 0 else (None, None)
        if past is None or reply is None or reply.type != "assistant/message":
            raise UsageError(f"seq {reply_seq} of session {self.id} is not an assistant message")
        if not past.cursor.step_open:
            raise UsageError(f"seq {reply_seq} was not produced by a model call (it stands outside a step)")
        return build_context(past, self.runtime.language)

    async def consolidate(self) -> str:
        """Turn the history into a new memory with ``consolidate_fn`` and store it (replace semantics)."""
        self.writer.check_writable()
        memory = await self.consolidate_fn(self.memory, await self.messages())
        cursor = self.history.cursor
        data = {
            "content": memory,
            "source": "consolidate",
            "through_seq": cursor.next_seq - 1,
            "turn": cursor.last_turn,
        }
        await self.writer.write_free([make_event("memory/put", data)])
        return memory

    # -- fork ------------------------------------------------------------------------------------

    async def fork(self, *, runtime: SessionRuntime | None = None, **options: Any) -> Session:
        """Create a child session and open it; takes the arguments of `fork_record`.

        Opening reads the child's whole log (inherited prefix included); when only the id matters, use
        `fork_record`, whose cost does not depend on the history's length.
        """
        record = await self.fork_record(**options)
        return await self.open_child(record, runtime)

    async def fork_record(
        self,
        *,
        label: str,
        context: ForkContext = "none",
        prompt: str | None = None,
        system_prompt: str | None = None,
        session_id: SessionId | None = None,
        parent_id: SessionId | None = None,
        config: dict[str, object] | None = None,
        at_seq: int | None = None,
        boundary: int | None = None,
    ) -> SessionRecord:
        """Create a child session and return its record; memory and insight are never copied.

        Args:
            label: The child's label (its identity line).
            context: ``none``; ``inherit`` (by reference: the history up to the last completed turn when
                this session's turn is open, else all of it); or a function selecting messages to copy.
            prompt: Opening assistant message written into the child.
            system_prompt: The child's system prompt (None: none; the engine's merge chain decides it).
            session_id: The child's id (default: a new one).
            parent_id: Topology parent (default: this session).
            config: Frozen configuration recorded in the child.
            at_seq: With ``inherit``, fork at the turn holding this seq (a clicked message; see `Anchor`).
            boundary: With ``inherit``, fork at exactly this seq (see `Boundary`); never adjusted.

        Raises:
            ForkError: ``child_exists``, ``fork_unavailable``, ``invalid_boundary`` (see the store's rules).
        """
        events = opening_events(label, system_prompt, config)
        fork: ForkRequest | None = None
        if (at_seq is not None or boundary is not None) and context != "inherit":
            raise UsageError("at_seq and boundary choose a point of inherited history: use them with context='inherit'")
        if context == "inherit":
            fork = inherit_request(self.id, self.history.cursor, at_seq=at_seq, boundary=boundary)
        elif callable(context):
            copied = await copied_context(context, await self.messages())
            if copied is not None:
                events.append(copied)
        elif context != "none":
            raise UsageError(f"fork context must be 'none', 'inherit' or a function, not {context!r}")
        if prompt:
            events.append(make_event("assistant/message", {"content": prompt, "tool_calls": []}))
        if session_id is not None:
            await refuse_existing(self.store, session_id)
        record = await self.store.create_session(
            session_id=session_id,
            parent_id=parent_id if parent_id is not None else self.id,
            fork=fork,
            events=events,
            source_id=self.id,  # always the session forked from, whatever the context (topology may differ)
        )
        return record

    # -- token estimates -------------------------------------------------------------------------

    def heuristic_prompt_tokens(self) -> int:
        """The token counter's estimate of the next call's prompt, kept incrementally (O(1) in the history).

        Counted exactly: the first call may load the tokenizer (turns do not, until a prompt nears its window).
        """
        self.estimator.make_exact(self.history)
        return self.estimator.heuristic(self.history)

    def estimate_prompt_tokens(self) -> int:
        """Estimated size of the next call's prompt, corrected by the provider's count of the last call.

        Counted exactly, like `heuristic_prompt_tokens`.
        """
        self.estimator.make_exact(self.history)
        return self.estimator.estimate(self.history)


async def _refuse_tools(turn: Turn, result: SendResult) -> None:
    """A plain send offers no tools; answer any call the model makes anyway so the log stays valid."""
    if result.tool_calls:
        await turn.record_tool_results([(call, _NO_TOOLS_TEXT, True) for call in result.tool_calls])
