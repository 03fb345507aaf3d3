"""The turn runner: the tool-call loop around a session's turn (DESIGN.md §5).

Each round is one streamed model call. All tool calls of one reply start together and run
concurrently; their ``tool/call`` events are written before any runs and their results in call order
after all finish, so the log reads the same whatever order the tools finished in. A tool that raises or
gets bad arguments becomes an error result the model can read. Past ``max_rounds`` model calls the
turn stops with reason ``max_rounds``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from stellate.engine.events import (
    AssistantReply,
    MessageReceived,
    RoundEnd,
    RoundStart,
    TextChunk,
    ToolCallFinished,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnResult,
)
from stellate.engine.tools import ToolContext, ToolRegistry, ToolResult
from stellate.llm.types import TextDelta, Usage
from stellate.log.events import TurnEndReason
from stellate.log.messages import ToolCall
from stellate.session.session import Session
from stellate.session.turn import Turn
from stellate.session.types import SendDone, SendResult

__all__ = ["DEFAULT_MAX_ROUNDS", "ROUND_LIMIT_TEXT", "TurnRunner"]

#: Model calls allowed in one turn before it stops with reason ``max_rounds``.
DEFAULT_MAX_ROUNDS = 10
ROUND_LIMIT_TEXT = "Not run: the turn reached its limit of {limit} model calls. Answer with what you have."


@dataclass(slots=True)
class _Tally:
    rounds: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    content: str = ""

    def add(self, result: SendResult) -> None:
        self.rounds += 1
        self.content = result.content
        if result.usage is not None:
            self.input_tokens += result.usage.input_tokens
            self.output_tokens += result.usage.output_tokens

    def result(self, session_id: str, turn: int, reason: TurnEndReason) -> TurnResult:
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return TurnResult(
            session_id=session_id,
            turn=turn,
            content=self.content,
            reason=reason,
            rounds=self.rounds,
            tool_calls=self.tool_calls,
            usage=usage,
        )


class TurnRunner:
    """Runs one turn of a session: model calls and tool calls until the model answers without tools.

    Args:
        session: The session to run the turn on.
        tools: The tools this session may call.
        agent: Handed to tools through their `ToolContext`.
        max_rounds: Model calls allowed in the turn.
    """

    def __init__(
        self, session: Session, tools: ToolRegistry, *, agent: Any = None, max_rounds: int = DEFAULT_MAX_ROUNDS
    ):
        self.session = session
        self.tools = tools
        self.agent = agent
        self.max_rounds = max_rounds
        self.cancelled = asyncio.Event()

    async def run(self, content: str) -> AsyncIterator[TurnEvent]:
        """Run the turn, yielding its events; the last one is `TurnFinished`."""
        sid = self.session.id
        tally = _Tally()
        yield MessageReceived(session_id=sid, content=content)
        try:
            async with self.session.turn(content) as turn:
                reason: TurnEndReason = "completed"
                async for event in self._rounds(turn, tally):
                    yield event
                if tally.rounds >= self.max_rounds and self.session.history.cursor.step_open:
                    reason = "max_rounds"
                    await self._refuse_pending(turn)
                await turn.end(reason)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield TurnFinished(session_id=sid, result=tally.result(sid, turn.number, reason))

    async def _rounds(self, turn: Turn, tally: _Tally) -> AsyncIterator[TurnEvent]:
        sid = self.session.id
        specs = self.tools.specs()
        while tally.rounds < self.max_rounds:
            yield RoundStart(session_id=sid, round=tally.rounds + 1)
            result: SendResult | None = None
            async for event in turn.stream_step(specs):
                if isinstance(event, TextDelta):
                    yield TextChunk(session_id=sid, text=event.text)
                elif isinstance(event, SendDone):
                    result = event.result
            assert result is not None  # stream_step always ends with SendDone
            tally.add(result)
            yield AssistantReply(
                session_id=sid, round=tally.rounds, content=result.content, tool_calls=result.tool_calls
            )
            if result.tool_calls and tally.rounds < self.max_rounds:
                async for tool_event in self._run_tools(turn, result.tool_calls, tally):
                    yield tool_event
            yield RoundEnd(session_id=sid, round=tally.rounds)
            if not result.tool_calls:
                return

    async def _run_tools(self, turn: Turn, calls: Sequence[ToolCall], tally: _Tally) -> AsyncIterator[TurnEvent]:
        sid = self.session.id
        for call in calls:
            yield ToolCallStarted(session_id=sid, call=call)
            await turn.record_tool_call(call)
        results = await asyncio.gather(*(self._call(call) for call in calls))
        tally.tool_calls += len(calls)
        # What the model will read, made storable by the turn (a tool may return a NUL), is what hooks see too.
        recorded = await turn.record_tool_results(
            [(c, r.content, r.is_error) for c, r in zip(calls, results, strict=True)]
        )
        for call, outcome, content in zip(calls, results, recorded, strict=True):
            yield ToolCallFinished(session_id=sid, call=call, content=content, is_error=outcome.is_error)

    async def _call(self, call: ToolCall) -> ToolResult:
        context = ToolContext(
            session_id=self.session.id, call_id=call.id, agent=self.agent, cancelled=self.cancelled, metadata={}
        )
        return await self.tools.call(call, context)

    async def _refuse_pending(self, turn: Turn) -> None:
        text = ROUND_LIMIT_TEXT.format(limit=self.max_rounds)
        pending = self.session.history.pending_calls
        await turn.record_tool_results([(call, text, True) for call in pending])
