"""A turn: opened by a user message, made of steps (one model call each), closed with a reason.

The engine's tool loop drives a `Turn` step by step; `Session.send` is a turn of exactly one step. Whatever
ends the turn — success, an exception, a cancellation — the log is left valid: pending tool calls get
error results, the step is closed, and ``turn/end`` records why. A turn writes through its session's
internal surface: `Session.writer` stages and commits its events, `Session.estimator` learns from each call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from stellate.errors import FormatError, LLMError, StellateError, UsageError
from stellate.llm.images import accepts_images, images_unsupported
from stellate.llm.types import (
    LLMRequest,
    LLMResponse,
    OutputSchema,
    ResponseDone,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from stellate.log.events import NewEvent, TurnEndReason, find_unstorable, make_event, now_ms, storable_text
from stellate.log.images import ImageRef, images_to_json
from stellate.log.messages import ToolCall, UserMessage
from stellate.log.repair import repair_events
from stellate.log.usage import CallUsage
from stellate.session.context import build_context, build_prefix, plan_compaction
from stellate.session.types import SendDone, SendResult, SessionStreamEvent

if TYPE_CHECKING:
    from stellate.session.session import Session

__all__ = ["Turn"]

_SUMMARY_ALLOWANCE = 0.1  # share of the window reserved for the summary itself when planning a compaction
_REPLACED_NOTE = (
    "\n\n[Note from stellate: {count} character(s) of this output (NUL or unpaired surrogates) could not be "
    "stored and were replaced with U+FFFD.]"
)


class Turn:
    """One open turn of a session; use it as ``async with session.turn(content) as turn``."""

    def __init__(self, session: Session, content: str, images: Sequence[ImageRef] = ()) -> None:
        if not content or not content.strip():
            raise UsageError("a turn needs a non-empty user message")
        if images and not accepts_images(session.runtime.llm):
            llm = session.runtime.llm
            raise images_unsupported(llm.provider, llm.model)
        problem = find_unstorable(content)
        if problem is not None:
            raise UsageError(f"the message cannot be stored: it holds {problem}; remove it and send again")
        self._session = session
        self._content = content
        self._images = tuple(images)
        self._partial: list[str] = []
        self._ended = False
        self._lease = contextlib.AsyncExitStack()
        self._resuming = False
        self.number = 0
        """Turn number, set when the turn opens."""

    @classmethod
    def resumed(cls, session: Session) -> Turn:
        """The session's paused turn, to go on with once its approvals are decided (no new ``turn/start``)."""
        turn = cls(session, "(resumed)")
        turn._resuming = True
        return turn

    @property
    def session(self) -> Session:
        """The session this turn belongs to."""
        return self._session

    # -- opening and closing ---------------------------------------------------------------------

    async def __aenter__(self) -> Turn:
        session = self._session
        session.writer.check_writable()
        if not self._resuming:
            self._check_fits()
            await session.images.store(session.store, self._images)
        # The session's only writer from here on; a lease taken for this turn alone goes back with its last write.
        await self._lease.enter_async_context(session.hold(until_turn_end=True))
        try:
            session.writer.check_writable()
            if self._resuming:
                self._take_over()
                return self
            if session.history.cursor.turn_open:
                raise UsageError(f"session {session.id} already has turn {session.history.cursor.last_turn} open")
            self.number = session.history.cursor.last_turn + 1
            session.writer.stage(
                [
                    make_event("turn/start", {"turn": self.number}),
                    make_event("user/message", self._user_message()),
                ]
            )
        except BaseException:
            await self._lease.aclose()
            raise
        return self

    def _take_over(self) -> None:
        cursor = self._session.history.cursor
        if not cursor.turn_open or not cursor.step_open:
            raise UsageError(f"session {self._session.id} has no paused turn to resume")
        self.number = cursor.last_turn

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._ended:
                return
            if exc is None:
                await self.end("completed")
            elif isinstance(exc, asyncio.CancelledError | GeneratorExit):
                await asyncio.shield(self._close("aborted", None))
            else:
                await asyncio.shield(self._close("error", exc))
        finally:
            await self._lease.aclose()

    def _user_message(self) -> dict[str, Any]:
        data: dict[str, Any] = {"content": self._content}
        if self._images:
            data["images"] = images_to_json(self._images)
        return data

    def _check_fits(self) -> None:
        session = self._session
        window = session.runtime.llm.max_context_tokens
        fixed = build_prefix(session.history.slots, None, session.runtime.language) + [
            UserMessage(content=self._content, images=self._images)
        ]
        needed = session.estimator.count_within(fixed, window, session.history)
        if needed > window:
            raise UsageError(
                f"the message and system prompt need about {needed} tokens, more than the model's window "
                f"of {window}; shorten the input",
                code="context_too_large",
                needed=needed,
                window=window,
            )

    async def end(self, reason: TurnEndReason = "completed") -> None:
        """Close the turn; pending tool calls (if any) get error results first."""
        await self._close(reason, None)

    async def _close(self, reason: TurnEndReason, error: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        session = self._session
        # After a write that failed with the store unreachable, the closing events are planned on the log as
        # stored, not on what this writer had staged (a store still down raises here; the next turn repairs).
        await session.writer.ensure_current()
        cursor = session.history.cursor
        if cursor.step_open and not cursor.step_replied and self._partial:
            partial, _ = storable_text("".join(self._partial))
            session.writer.stage([_assistant_event(partial, (), None, interrupted=True)])
        session.writer.stage(self._closers(reason, error))
        try:
            # On any failure `flush` leaves the session equal to the store. A store that was busy or gone
            # may still show this turn open: the next turn, taking the lease, repairs it (see `Session.hold`).
            await session.writer.flush(closing_turn=True)
        except FormatError as refusal:
            # Something unstorable slipped past the checks and the store refused the whole batch. Close what
            # the store holds, with the refusal as the turn's error.
            session.writer.stage(self._closers("error", refusal))
            await session.writer.flush(closing_turn=True)
            raise

    def _closers(self, reason: TurnEndReason, error: BaseException | None) -> list[NewEvent]:
        cursor = self._session.history.cursor
        closers = repair_events(cursor, call_names=self._call_names(), time=now_ms(), reason=reason)
        if closers and error is not None:
            closers[-1].data["error"] = _error_data(error)
        return closers

    def _call_names(self) -> dict[str, str]:
        calls = self._session.history.pending_calls
        return {c.id: c.name for c in calls}

    # -- steps -----------------------------------------------------------------------------------

    async def step(self, tools: Sequence[ToolSpec] = (), *, output: OutputSchema | None = None) -> SendResult:
        """Make one model call with the context as it stands and record its reply.

        ``output`` asks a native adapter to answer in that JSON schema (see `stellate.session.output`).
        """
        request = await self._open_step(tools, output)
        started = time.monotonic()
        response = await self._session.runtime.llm.complete(request)
        return await self._finish_step(response, _CallTiming(started, first=None))

    async def stream_step(
        self, tools: Sequence[ToolSpec] = (), *, output: OutputSchema | None = None
    ) -> AsyncIterator[SessionStreamEvent]:
        """Like `step`, yielding the model's stream events, then `SendDone` with the recorded result."""
        request = await self._open_step(tools, output)
        response: LLMResponse | None = None
        timing = _CallTiming(time.monotonic(), first=None)
        try:
            async for event in self._session.runtime.llm.stream(request):
                if isinstance(event, ResponseDone):
                    response = event.response
                    timing.done = time.monotonic()
                    continue
                if isinstance(event, TextDelta | ToolCallDelta) and timing.first is None:
                    timing.first = time.monotonic()
                if isinstance(event, TextDelta):
                    self._partial.append(event.text)
                yield event
        except LLMError:
            if response is None:
                raise
            # The stream broke after its final response (a connection dropped past [DONE]): the reply is whole.
        if response is None:
            raise StellateError("the model's stream ended without a final response", code="llm_error")
        yield SendDone(result=await self._finish_step(response, timing))

    async def _open_step(self, tools: Sequence[ToolSpec], output: OutputSchema | None = None) -> LLMRequest:
        session, history = self._session, self._session.history
        if self._ended:
            raise UsageError("the turn has ended")
        if history.cursor.step_open:
            raise UsageError(f"step {history.cursor.step} still waits for tool results: {history.cursor.unanswered}")
        await self._compress_if_needed()
        step = {"turn": self.number, "step": history.cursor.step + 1, "tools": [t.name for t in tools]}
        session.writer.stage([make_event("step/start", step)])
        if session.runtime.durability == "step":
            await session.writer.flush()
        self._partial = []
        self._insight_sent = history.slots.insight
        messages = build_context(history, session.runtime.language)
        self._sent = session.estimator.sent(history, messages)
        return LLMRequest(
            # A history with no image at all (the fold knows) is sent as it is: no scan of a long context.
            messages=await session.images.attach(session.store, messages) if history.fold.may_hold_images else messages,
            tools=tuple(tools),
            max_output_tokens=session.runtime.max_output_tokens,
            output=output,
        )

    async def _finish_step(self, response: LLMResponse, timing: _CallTiming) -> SendResult:
        session, history = self._session, self._session.history
        step = history.cursor.step
        message = response.message
        reply = _assistant_event(message.content, message.tool_calls, response)
        problem = find_unstorable(reply.data)
        if problem is not None:
            self._partial = []  # the error carries the reply; it is not kept as an interrupted message
            raise LLMError(
                f"the model's reply cannot be stored: it holds {problem}; as received: {_escaped_reply(response)}",
                code="reply_unstorable",
            )
        events = [reply]
        if self._insight_sent is not None:  # naming what it consumed: an insight put meanwhile stays pending
            events.append(make_event("insight/consumed", {"content": self._insight_sent}))
        if not message.tool_calls:
            events.append(make_event("step/end", {"turn": self.number, "step": step}))
        events.append(self._called_event(response, step, timing))
        session.writer.stage(events)
        if response.usage is not None and response.usage.input_tokens:
            session.estimator.learn(self._sent, response.usage.input_tokens)
        # No write here: the reply is committed with the tool calls it requests (before they run) or with
        # the turn's end, whichever comes next; nothing awaits in between.
        return SendResult(
            content=message.content,
            tool_calls=message.tool_calls,
            usage=response.usage,
            stop_reason=response.stop_reason,
            turn=self.number,
            step=step,
        )

    def _called_event(self, response: LLMResponse, step: int, timing: _CallTiming) -> NewEvent:
        """What the call cost (tokens unknown when the provider reported none), recorded with the step's events."""
        llm, usage = self._session.runtime.llm, response.usage
        call = CallUsage(
            turn=self.number,
            step=step,
            provider=response.provider or llm.provider,
            model=response.model or llm.model,
            input_tokens=None if usage is None else usage.input_tokens,
            output_tokens=None if usage is None else usage.output_tokens,
            latency_ms=timing.latency_ms(),
            ttft_ms=timing.ttft_ms(),
            stop_reason=response.stop_reason or None,
        )
        # Ignorable: a reader that predates it skips it; the transcript never shows it to the model.
        return make_event("model/called", call.to_data(), ignorable=True)

    # -- tools -----------------------------------------------------------------------------------

    async def record_tool_call(self, call: ToolCall) -> None:
        """Record that a tool call starts running (so a crash leaves its outcome marked unknown)."""
        self._session.writer.stage(
            [make_event("tool/call", {"call_id": call.id, "name": call.name, "arguments": call.arguments})]
        )
        if self._session.runtime.durability == "step":
            await self._session.writer.flush()

    async def record_tool_result(
        self, call: ToolCall, content: str, *, is_error: bool = False, images: Sequence[bytes] = ()
    ) -> str:
        """Record a tool's result; the step closes when its last call is answered.

        ``images`` are stored as blobs and referred to by the result (bytes that are no image are left out, with
        a note in the content saying so).

        Returns:
            The content as recorded: characters no store keeps (NUL, unpaired surrogates) are replaced with
            U+FFFD and a note saying so is appended, so the model knows; the turn goes on.
        """
        history = self._session.history
        stored, replaced = storable_text(content)
        result: dict[str, Any] = {"call_id": call.id, "name": call.name, "content": stored, "is_error": is_error}
        if replaced:
            result["content"] = stored = stored + _REPLACED_NOTE.format(count=replaced)
            result["replaced_characters"] = replaced
        if images:
            refs, note = await self._session.images.store_tool_images(self._session.store, images)
            result["content"] = stored = stored + note
            if refs:
                result["images"] = images_to_json(refs)
        events = [make_event("tool/result", result)]
        if history.cursor.unanswered == (call.id,):
            events.append(make_event("step/end", {"turn": self.number, "step": history.cursor.step}))
        self._session.writer.stage(events)
        return stored

    async def record_tool_results(
        self, results: Sequence[tuple[ToolCall, str, bool]], *, images: Sequence[Sequence[bytes]] | None = None
    ) -> list[str]:
        """Record several results in call order, then write them in one batch; returns the contents as recorded."""
        each = images if images is not None else [()] * len(results)
        recorded = [
            await self.record_tool_result(call, content, is_error=is_error, images=shown)
            for (call, content, is_error), shown in zip(results, each, strict=True)
        ]
        if self._session.runtime.durability == "step":
            await self._session.writer.flush()
        return recorded

    # -- approval --------------------------------------------------------------------------------

    async def pause(self, requests: Sequence[dict[str, Any]]) -> None:
        """Record approval requests for calls of the open step and park the turn: it stays open, the lease goes.

        The turn is over for this writer (like `end`), but the log keeps it open and paused (`Cursor.paused`):
        whoever decides the last approval resumes it with `resumed`, on any process.
        """
        self._ended = True
        self._session.writer.stage([make_event("tool/approval_requested", data) for data in requests])
        await self._session.writer.flush(closing_turn=True)

    def record_decision(self, data: dict[str, Any]) -> None:
        """Stage a ``tool/approval_decided`` event (written with the turn's next batch)."""
        self._session.writer.stage([make_event("tool/approval_decided", data)])

    # -- structured output -----------------------------------------------------------------------

    def add_message(self, content: str) -> None:
        """Add a user message between steps (a correction the model reads on its next call); written with it."""
        self._session.writer.stage([make_event("user/message", {"content": content, "correction": True})])

    def record_output(self, name: str, mode: str, value: Any) -> None:
        """Record the turn's validated structured output (JSON ``value``) after the step that produced it."""
        data = {"turn": self.number, "name": name, "mode": mode, "value": value}
        self._session.writer.stage([make_event("output/validated", data)])

    # -- compression -----------------------------------------------------------------------------

    async def _compress_if_needed(self) -> None:
        session, history = self._session, self._session.history
        window = session.runtime.llm.max_context_tokens
        limit = session.runtime.compress_threshold * window
        if session.estimator.estimate_within(history, limit) <= limit:
            return  # under the limit by the byte bound, or else by the exact count (loaded then)
        fixed = session.counter.count(
            build_prefix(history.slots, None, session.runtime.language) + history.fold.open_turn_messages()
        )
        budget = int((session.runtime.compress_target - _SUMMARY_ALLOWANCE) * window) - fixed
        plan = plan_compaction(history, budget=max(budget, 0))
        if plan is None:
            return
        if session.runtime.durability == "step":
            await session.writer.flush()  # the user's message is safe before a slow summary call
        try:
            summary = await session.compress_fn(plan.messages)
        except Exception as exc:  # a failing summarizer must not cost the user their turn
            failure = {"code": "compress_failed", "message": _describe(exc), "dropped_through_seq": plan.through_seq}
            session.writer.stage([make_event("error/reported", failure)])
            return
        summary, _ = storable_text(summary)
        session.writer.stage([make_event("compaction/summary", {"through_seq": plan.through_seq, "summary": summary})])
        session.estimator.calibrate(0)


class _CallTiming:
    """When a model call started, sent its first text or tool-call piece, and finished (monotonic seconds)."""

    __slots__ = ("done", "first", "started")

    def __init__(self, started: float, *, first: float | None) -> None:
        self.started = started
        self.first = first
        self.done: float | None = None

    def latency_ms(self) -> int:
        end = self.done if self.done is not None else time.monotonic()
        return round((end - self.started) * 1000)

    def ttft_ms(self) -> int | None:
        return None if self.first is None else round((self.first - self.started) * 1000)


def _assistant_event(
    content: str, calls: Sequence[ToolCall], response: LLMResponse | None, *, interrupted: bool = False
) -> NewEvent:
    data: dict[str, Any] = {
        "content": content,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
    }
    if response is not None:
        data.update(provider=response.provider, model=response.model, stop_reason=response.stop_reason)
        if response.usage is not None:
            data["usage"] = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens}
    if interrupted:
        data["interrupted"] = True
    return make_event("assistant/message", data)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _error_data(exc: BaseException) -> dict[str, Any]:
    code = exc.code if isinstance(exc, StellateError) else "unexpected_error"
    message, _ = storable_text(_describe(exc))  # a provider's error text may echo what the store refuses
    return {"code": code, "message": message}


def _escaped_reply(response: LLMResponse) -> str:
    """The reply as received, escaped by ``repr`` so that every character is visible and storable."""
    message = response.message
    calls = "".join(f"; tool call {c.name!r} with arguments {c.arguments!r}" for c in message.tool_calls)
    return repr(message.content) + calls
