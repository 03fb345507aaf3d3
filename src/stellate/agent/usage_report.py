"""What a session's model calls cost: one row per call, totals per turn and for the session, priced when known.

Read from the log's ``model/called`` events (`stellate.log.usage`). A fork's inherited prefix holds its
source's calls: those rows are marked ``inherited``, and the session's totals keep them apart (``own`` counts
only the calls this session made; ``inherited`` the ones it shows from its source), so adding up the sessions of
a tree counts every call once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stellate.agent.context_window import ContextWindow, context_window
from stellate.agent.parts import AgentParts
from stellate.agent.prices import Prices, call_cost, sum_costs
from stellate.log.events import Event
from stellate.log.usage import MODEL_CALLED, CallUsage, UsageTotals, call_usage, usage_totals

__all__ = ["AgentUsage", "CallRow", "ContextWindow", "TurnUsage", "UsageReport", "usage_report"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    """One model call of the session's log."""

    seq: int
    """Seq of its ``model/called`` event."""
    reply_seq: int | None
    """Seq of the assistant message the call produced (what `AgentUsage.context_window` takes)."""
    usage: CallUsage
    cost: float | None
    """In the price table's currency; None when the model is not priced or a token count is unknown."""
    inherited: bool
    """Made by the fork's source, before the fork (read by reference)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnUsage:
    """The calls of one turn, summed."""

    turn: int
    totals: UsageTotals
    cost: float | None
    """Unknown as soon as one call's cost is."""
    inherited: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReport:
    """A session's calls, per-turn totals and session totals (own calls and inherited ones apart)."""

    session_id: str
    calls: list[CallRow]
    turns: list[TurnUsage]
    own: UsageTotals
    """The calls this session made (a fork's inherited prefix left out): the session's total."""
    own_cost: float | None
    inherited: UsageTotals
    """The calls of the prefix a fork inherited from its source (zero calls for a root)."""
    inherited_cost: float | None


def usage_report(session_id: str, events: Iterable[Event], *, inherited: int, prices: Prices) -> UsageReport:
    """The report over ``events`` (its ``assistant/message`` and ``model/called`` events; others are skipped).

    Args:
        session_id: The session the events belong to.
        events: The session's log, or just those two types of its events, in seq order.
        inherited: How many events of the log the session inherited by reference (seq below it: the source's).
        prices: The price table.
    """
    rows: list[CallRow] = []
    called: list[Event] = []
    reply: int | None = None
    for event in events:
        if event.type == "assistant/message":
            reply = event.seq
        elif event.type == MODEL_CALLED:
            call = call_usage(event)
            rows.append(
                CallRow(
                    seq=event.seq,
                    reply_seq=reply,
                    usage=call,
                    cost=call_cost(prices, call),
                    inherited=event.seq < inherited,
                )
            )
            called.append(event)
    own = [e for e in called if e.seq >= inherited]
    mine = [r for r in rows if not r.inherited]
    theirs = [r for r in rows if r.inherited]
    return UsageReport(
        session_id=session_id,
        calls=rows,
        turns=_turns(rows, called),
        own=usage_totals(own),
        own_cost=sum_costs(r.cost for r in mine),
        inherited=usage_totals(e for e in called if e.seq < inherited),
        inherited_cost=sum_costs(r.cost for r in theirs),
    )


def _turns(rows: Sequence[CallRow], called: Sequence[Event]) -> list[TurnUsage]:
    by_turn: dict[int, list[int]] = {}
    for index, row in enumerate(rows):
        by_turn.setdefault(row.usage.turn, []).append(index)
    return [
        TurnUsage(
            turn=turn,
            totals=usage_totals(called[i] for i in indexes),
            cost=sum_costs(rows[i].cost for i in indexes),
            inherited=rows[indexes[0]].inherited,
        )
        for turn, indexes in by_turn.items()
    ]


class AgentUsage(AgentParts):
    """The usage reads of `Agent`: per-call cost and the context window of a past call."""

    async def usage_report(self, session_id: str) -> UsageReport:
        """Every model call of the session with its tokens, latency and cost; totals per turn and per session.

        Raises:
            NotFoundError: unknown session.
        """
        session = await self._session(session_id)
        events = await session.store.read_events(session.id, types=("assistant/message", MODEL_CALLED))
        return usage_report(session.id, events, inherited=session.record.inherited, prices=self.prices)

    async def context_window(self, session_id: str, reply_seq: int | None = None) -> ContextWindow:
        """How the context of a past model call filled the model's window, part by part.

        Args:
            session_id: The session.
            reply_seq: Seq of the assistant message the call produced (a `CallRow.reply_seq`); the last call
                when None.

        Raises:
            NotFoundError: unknown session.
            UsageError: ``reply_seq`` is not an assistant message made by a model call, or no call was made yet.
        """
        session = await self._session(session_id)
        return await context_window(session, reply_seq, tools=(await self._tools_for(session)).specs())
