"""The turn runner: the tool-call loop around a session's turn (DESIGN.md §5).

Each round is one streamed model call. All tool calls of one reply start together and run
concurrently; their ``tool/call`` events are written before any runs and their results in call order
after all finish, so the log reads the same whatever order the tools finished in. A tool that raises or
gets bad arguments becomes an error result the model can read. Past ``max_rounds`` model calls the
turn stops with reason ``max_rounds``. A reply calling a tool that needs approval (`stellate.engine.approval`)
pauses the turn before any of its calls runs; `TurnRunner.resume` goes on with it once they are decided.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from stellate import observability
from stellate.engine.approval import ApprovalPolicy, resolve_calls
from stellate.engine.events import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantReply,
    MessageReceived,
    OutputReady,
    RoundEnd,
    RoundStart,
    TextChunk,
    ToolCallFinished,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnOutcome,
    TurnResult,
)
from stellate.engine.output import OutputTurn
from stellate.engine.tools import ToolContext, ToolRegistry, ToolResult
from stellate.llm.types import OutputSchema, TextDelta, ToolSpec, Usage
from stellate.log.events import JsonObject, TurnEndReason
from stellate.log.images import ImageRef
from stellate.log.messages import ToolCall
from stellate.session.output import OutputContract
from stellate.session.session import Session
from stellate.session.turn import Turn
from stellate.session.types import SendDone, SendResult

__all__ = ["DEFAULT_MAX_ROUNDS", "ROUND_LIMIT_TEXT", "TurnRunner"]

#: Model calls allowed in one turn before it stops with reason ``max_rounds``.
DEFAULT_MAX_ROUNDS = 10
_log = observability.get_logger(__name__)

ROUND_LIMIT_TEXT = "Not run: the turn reached its limit of {limit} model calls. Answer with what you have."


@dataclass(slots=True)
class _Tally:
    rounds: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    content: str = ""
    output: Any = None

    def add(self, result: SendResult) -> None:
        self.rounds += 1
        self.content = result.content
        if result.usage is not None:
            self.input_tokens += result.usage.input_tokens
            self.output_tokens += result.usage.output_tokens

    def result(self, session_id: str, turn: int, reason: TurnOutcome) -> TurnResult:
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return TurnResult(
            session_id=session_id,
            turn=turn,
            content=self.content,
            reason=reason,
            rounds=self.rounds,
            tool_calls=self.tool_calls,
            usage=usage,
            output=self.output,
        )


class TurnRunner:
    """Runs one turn of a session: model calls and tool calls until the model answers without tools.

    Args:
        session: The session to run the turn on.
        tools: The tools this session may call.
        agent: Handed to tools through their `ToolContext`.
        max_rounds: Model calls allowed in the turn.
        approvals: The tools whose calls wait for a person's approval.
    """

    def __init__(
        self,
        session: Session,
        tools: ToolRegistry,
        *,
        agent: Any = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        approvals: ApprovalPolicy | None = None,
    ):
        self.session = session
        self.tools = tools
        self.agent = agent
        self.max_rounds = max_rounds
        self.approvals = approvals or ApprovalPolicy()
        self._requests: list[JsonObject] = []
        self.cancelled = asyncio.Event()
        self._pursuit: OutputTurn[Any] | None = None
        self._turn_tools = tools
        self._reply = SendResult(content="")

    async def run(
        self, content: str, *, output: OutputContract[Any] | None = None, images: Sequence[ImageRef] = ()
    ) -> AsyncIterator[TurnEvent]:
        """Run the turn, yielding its events; the last one is `TurnFinished`.

        With ``output``, the turn ends only on a valid answer of that type (`OutputReady` comes before
        `TurnFinished`, and ``TurnResult.output`` holds it).

        Raises:
            OutputValidationError: the answers stayed invalid past the contract's retries.
        """
        sid = self.session.id
        tally = _Tally()
        self._pursuit = pursuit = OutputTurn(output, self.session.runtime.llm) if output is not None else None
        self._turn_tools = pursuit.tools(self.tools) if pursuit is not None else self.tools
        yield MessageReceived(session_id=sid, content=content)
        with observability.turn_span(sid, content) as span:
            try:
                async with self.session.turn(content, images=images) as turn:
                    first_seq = self.session.history.next_seq - 2  # turn/start and the user message
                    span.record({"stellate.turn": turn.number, "stellate.seq.first": first_seq})
                    _log.debug("turn %d started", turn.number)
                    async for event in self._rounds(turn, tally):
                        yield event
                    reason = await self._stop(turn, tally)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
            span.record({"stellate.seq.last": self.session.history.next_seq - 1})
            span.record_turn(reason, tally.rounds, tally.input_tokens, tally.output_tokens)
            _log.debug("turn %d ended: %s after %d model call(s)", turn.number, reason, tally.rounds)
        if pursuit is not None and reason != "awaiting_approval":
            tally.output = pursuit.value
            yield OutputReady(session_id=sid, output=pursuit.value)
        yield TurnFinished(session_id=sid, result=tally.result(sid, turn.number, reason))

    async def resume(self, decisions: Sequence[JsonObject]) -> AsyncIterator[TurnEvent]:
        """Go on with the session's paused turn: record the last ``decisions``, run the step's calls, carry on.

        Approved calls run (with their edited arguments, if any), denied ones are answered with the denial's
        text, calls that needed no approval run as they would have; then the tool loop continues as in `run`
        (it may pause again). The last event is `TurnFinished`.
        """
        sid = self.session.id
        tally = _Tally()
        self._pursuit, self._turn_tools = None, self.tools  # an output contract does not outlive the pause
        async with Turn.resumed(self.session) as turn:
            history = self.session.history
            tally.rounds = history.cursor.step
            requested = {c.id: c for c in history.pending_calls}
            for data in decisions:
                turn.record_decision(data)
                yield _decided(sid, requested[data["call_id"]], data)
            # Durable before any tool runs, whatever the durability: a crash now must not leave the call
            # waiting, to be approved (and run) a second time.
            await self.session.writer.flush()
            calls, denied = resolve_calls(
                [c for c in history.pending_calls if c.id in history.cursor.unanswered], history.approvals
            )
            async for event in self._run_tools(turn, calls, tally, denied=denied):
                yield event
            yield RoundEnd(session_id=sid, round=tally.rounds)
            async for event in self._rounds(turn, tally):
                yield event
            reason = await self._stop(turn, tally)
        yield TurnFinished(session_id=sid, result=tally.result(sid, turn.number, reason))

    async def _stop(self, turn: Turn, tally: _Tally) -> TurnOutcome:
        """End the turn, or park it when calls wait for approval; returns how it stopped."""
        if self._requests:
            requests, self._requests = self._requests, []
            await turn.pause(requests)
            return "awaiting_approval"
        reason = await self._closing_reason(turn, tally)
        await turn.end(reason)
        return reason

    async def _closing_reason(self, turn: Turn, tally: _Tally) -> TurnEndReason:
        reason: TurnEndReason = "completed"
        if tally.rounds >= self.max_rounds and self.session.history.cursor.step_open:
            reason = "max_rounds"
            await self._refuse_pending(turn)
        if self._pursuit is not None and not self._pursuit.found:
            raise self._pursuit.exhausted()
        return reason

    async def _rounds(self, turn: Turn, tally: _Tally) -> AsyncIterator[TurnEvent]:
        sid = self.session.id
        specs = self._turn_tools.specs()
        schema = self._pursuit.request_schema() if self._pursuit is not None else None
        while tally.rounds < self.max_rounds:
            yield RoundStart(session_id=sid, round=tally.rounds + 1)
            async for chunk in self._model_call(turn, specs, schema):
                yield chunk
            result = self._reply
            tally.add(result)
            yield AssistantReply(
                session_id=sid, round=tally.rounds, content=result.content, tool_calls=result.tool_calls
            )
            answered = False
            if result.tool_calls and tally.rounds < self.max_rounds:
                requests = self.approvals.requests(result.tool_calls, turn=turn.number, step=result.step or 0)
                if requests:
                    self._requests = requests
                    for data in requests:
                        yield _requested(sid, turn.number, data)
                    return
                async for tool_event in self._run_tools(turn, result.tool_calls, tally):
                    yield tool_event
                answered = self._answered_by_tool(turn)
            elif not result.tool_calls:
                answered = self._pursuit is None or self._pursuit.check_reply(turn, result)
            yield RoundEnd(session_id=sid, round=tally.rounds)
            if answered:
                return

    async def _model_call(
        self, turn: Turn, specs: Sequence[ToolSpec], schema: OutputSchema | None
    ) -> AsyncIterator[TextChunk]:
        """One streamed model call in its span; the recorded reply lands in ``self._reply``."""
        session, llm = self.session, self.session.runtime.llm
        step = session.history.cursor.step + 1
        with observability.model_span(session.id, llm.provider, llm.model, turn=turn.number, step=step) as span:
            span.record_content("gen_ai.input.messages", lambda: _input_messages(session))
            if self._pursuit is not None:
                span.record({"gen_ai.output.type": "json"})
            result: SendResult | None = None
            async for event in turn.stream_step(specs, output=schema):
                if isinstance(event, TextDelta):
                    yield TextChunk(session_id=session.id, text=event.text)
                elif isinstance(event, SendDone):
                    result = event.result
            assert result is not None  # stream_step always ends with SendDone
            usage = result.usage  # None: the provider reported none, which the span leaves out rather than count 0
            inputs, outputs = (usage.input_tokens, usage.output_tokens) if usage is not None else (None, None)
            span.record_usage(llm.model, inputs, outputs, result.stop_reason)
            span.record_content("gen_ai.output.messages", lambda: _output_messages(result))
        self._reply = result

    def _answered_by_tool(self, turn: Turn) -> bool:
        pursuit = self._pursuit
        return pursuit is not None and pursuit.check_tools(turn)

    async def _run_tools(
        self, turn: Turn, calls: Sequence[ToolCall], tally: _Tally, *, denied: dict[str, str] | None = None
    ) -> AsyncIterator[TurnEvent]:
        """Run ``calls`` together and record their results in call order; ``denied`` ones are answered, not run."""
        sid, refused = self.session.id, denied or {}
        running = [call for call in calls if call.id not in refused]
        for call in running:
            yield ToolCallStarted(session_id=sid, call=call)
            await turn.record_tool_call(call)
        outcomes = dict(
            zip((c.id for c in running), await asyncio.gather(*(self._call(c) for c in running)), strict=True)
        )
        results = [outcomes.get(c.id) or ToolResult(refused[c.id], is_error=True) for c in calls]
        tally.tool_calls += len(running)
        # What the model will read, made storable by the turn (a tool may return a NUL), is what hooks see too.
        recorded = await turn.record_tool_results(
            [(c, r.content, r.is_error) for c, r in zip(calls, results, strict=True)],
            images=[r.images for r in results],
        )
        for call, outcome, content in zip(calls, results, recorded, strict=True):
            yield ToolCallFinished(session_id=sid, call=call, content=content, is_error=outcome.is_error)

    async def _call(self, call: ToolCall) -> ToolResult:
        context = ToolContext(
            session_id=self.session.id, call_id=call.id, agent=self.agent, cancelled=self.cancelled, metadata={}
        )
        with observability.tool_span(self.session.id, call.name, call.id, call.arguments) as span:
            result = await self._turn_tools.call(call, context)
            span.record_tool_result(result.is_error, lambda: result.content)
        return result

    async def _refuse_pending(self, turn: Turn) -> None:
        text = ROUND_LIMIT_TEXT.format(limit=self.max_rounds)
        pending = self.session.history.pending_calls
        await turn.record_tool_results([(call, text, True) for call in pending])


def _requested(session_id: str, turn: int, data: JsonObject) -> ApprovalRequested:
    call = ToolCall(id=data["call_id"], name=data["name"], arguments=data["arguments"])
    return ApprovalRequested(
        session_id=session_id, turn=turn, call=call, deadline=data["deadline"], on_timeout=data["on_timeout"]
    )


def _decided(session_id: str, call: ToolCall, data: JsonObject) -> ApprovalDecided:
    return ApprovalDecided(
        session_id=session_id,
        call_id=call.id,
        name=call.name,
        decision=data["decision"],
        by=data["by"],
        arguments=data.get("arguments"),
        reason=data.get("reason"),
    )


def _input_messages(session: Session) -> list[dict[str, Any]]:
    return observability.input_messages([(m.role, getattr(m, "content", "")) for m in session.context()])


def _output_messages(result: SendResult) -> list[dict[str, Any]]:
    calls = [(c.id, c.name, c.arguments) for c in result.tool_calls]
    return observability.output_messages(result.content, calls, result.stop_reason)
