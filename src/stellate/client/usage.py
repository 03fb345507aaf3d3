"""The usage routes' JSON read back into the `Agent`'s own types, so remote and local code read the same objects."""

from __future__ import annotations

from typing import Any

from stellate.agent.context_window import ContextPart, ContextWindow
from stellate.agent.usage_report import CallRow, TurnUsage, UsageReport
from stellate.log.usage import CallUsage, UsageTotals

__all__ = ["context_window_from_json", "usage_report_from_json"]

_CALL_FIELDS = tuple(CallUsage.__dataclass_fields__)


def usage_report_from_json(data: dict[str, Any]) -> UsageReport:
    """A `UsageReport` from the body of ``GET /v1/sessions/{id}/usage``."""
    return UsageReport(
        session_id=data["session_id"],
        calls=[
            CallRow(
                seq=row["seq"],
                reply_seq=row["reply_seq"],
                usage=CallUsage(**{name: row[name] for name in _CALL_FIELDS}),
                cost=row["cost"],
                inherited=row["inherited"],
            )
            for row in data["calls"]
        ],
        turns=[
            TurnUsage(turn=t["turn"], totals=_totals(t), cost=t["cost"], inherited=t["inherited"])
            for t in data["turns"]
        ],
        own=_totals(data["own"]),
        own_cost=data["own"]["cost"],
        inherited=_totals(data["inherited"]),
        inherited_cost=data["inherited"]["cost"],
    )


def _totals(data: dict[str, Any]) -> UsageTotals:
    return UsageTotals(
        calls=data["calls"],
        input_tokens=data["input_tokens"],
        output_tokens=data["output_tokens"],
        latency_ms=data["latency_ms"],
    )


def context_window_from_json(data: dict[str, Any]) -> ContextWindow:
    """A `ContextWindow` from the body of ``GET /v1/sessions/{id}/context-window``."""
    return ContextWindow(
        session_id=data["session_id"],
        reply_seq=data["reply_seq"],
        parts=[ContextPart(name=p["name"], tokens=p["tokens"], messages=p["messages"]) for p in data["parts"]],
        total_tokens=data["total_tokens"],
        reported_input_tokens=data["reported_input_tokens"],
        window=data["window"],
        threshold=data["threshold"],
        model=data["model"],
    )
