"""The JSON bodies of the usage routes: what each model call cost, and a past call's context window."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from stellate.agent.context_window import ContextWindow
from stellate.agent.usage_report import UsageReport
from stellate.log.usage import UsageTotals

__all__ = ["CallUsageOut", "ContextPartOut", "ContextWindowOut", "TurnUsageOut", "UsageReportOut", "UsageTotalsOut"]


class CallUsageOut(BaseModel):
    """One model call. A token count or cost of ``null`` is unknown (the provider sent none, or no price)."""

    seq: int
    """Seq of its ``model/called`` event."""
    reply_seq: int | None
    """Seq of the assistant message it produced: ask ``/context-window?reply_seq=`` for its context."""
    turn: int
    step: int
    provider: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    """From the request to the last piece of the reply."""
    ttft_ms: int | None
    """From the request to the first text or tool-call piece (null when the call was not streamed)."""
    stop_reason: str | None
    cost: float | None
    """In the currency of the server's price table; null when unknown."""
    inherited: bool
    """Made by the fork's source before the fork."""


class UsageTotalsOut(BaseModel):
    """Sums over some calls; a token total or cost is null (unknown) as soon as one call's is."""

    calls: int
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    cost: float | None


class TurnUsageOut(UsageTotalsOut):
    """The calls of one turn, summed."""

    turn: int
    inherited: bool


class UsageReportOut(BaseModel):
    """A session's calls, per-turn totals and session totals."""

    session_id: str
    calls: list[CallUsageOut]
    turns: list[TurnUsageOut]
    own: UsageTotalsOut
    """The calls this session made: its total (a fork's inherited calls are its source's)."""
    inherited: UsageTotalsOut
    """The calls of the prefix a fork inherited (counted in its source's ``own``)."""
    priced: bool
    """Whether the server has a price table at all (else every cost is null)."""

    @classmethod
    def of(cls, report: UsageReport, *, priced: bool) -> UsageReportOut:
        """The body of ``report``."""
        return cls(
            session_id=report.session_id,
            calls=[
                CallUsageOut(seq=r.seq, reply_seq=r.reply_seq, cost=r.cost, inherited=r.inherited, **r.usage.to_data())
                for r in report.calls
            ],
            turns=[
                TurnUsageOut(turn=t.turn, inherited=t.inherited, **_totals(t.totals, t.cost).model_dump())
                for t in report.turns
            ],
            own=_totals(report.own, report.own_cost),
            inherited=_totals(report.inherited, report.inherited_cost),
            priced=priced,
        )


def _totals(totals: UsageTotals, cost: float | None) -> UsageTotalsOut:
    return UsageTotalsOut(
        calls=totals.calls,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        latency_ms=totals.latency_ms,
        cost=cost,
    )


class ContextPartOut(BaseModel):
    """One part of a call's context."""

    name: Literal["system_prompt", "identity", "insight", "summary", "history", "tools"]
    tokens: int
    """Estimated by the server's token counter."""
    messages: int


class ContextWindowOut(BaseModel):
    """How a past call's context filled the model's window."""

    session_id: str
    reply_seq: int
    parts: list[ContextPartOut]
    total_tokens: int
    reported_input_tokens: int | None
    """The provider's own count of that prompt, when it sent one."""
    window: int
    """The session's model's context window (as configured now)."""
    threshold: int
    """Above this many tokens the session compresses its history before a call."""
    model: str

    @classmethod
    def of(cls, found: ContextWindow) -> ContextWindowOut:
        """The body of ``found``."""
        return cls(
            session_id=found.session_id,
            reply_seq=found.reply_seq,
            parts=[ContextPartOut(name=p.name, tokens=p.tokens, messages=p.messages) for p in found.parts],
            total_tokens=found.total_tokens,
            reported_input_tokens=found.reported_input_tokens,
            window=found.window,
            threshold=found.threshold,
            model=found.model,
        )
