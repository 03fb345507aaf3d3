"""What each model call cost, read from the log's ``model/called`` events.

A turn writes one ``model/called`` event per model call (ignorable: it never reaches the model). Its tokens
are the provider's report, or ``None`` when the provider sent none: unknown is not zero. `usage_totals` sums
any run of events (a turn, a session, one side of a comparison); a total of tokens is unknown as soon as
one call's is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from stellate.log.events import Event, JsonObject

__all__ = ["CallUsage", "UsageTotals", "call_usage", "usage_totals"]

MODEL_CALLED = "model/called"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallUsage:
    """One model call: who answered, what it cost in tokens and time, and why it stopped."""

    turn: int
    step: int
    provider: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    ttft_ms: int | None
    stop_reason: str | None

    def to_data(self) -> JsonObject:
        """The ``data`` of the ``model/called`` event that records this call."""
        return {
            "turn": self.turn,
            "step": self.step,
            "provider": self.provider,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": self.latency_ms,
            "ttft_ms": self.ttft_ms,
            "stop_reason": self.stop_reason,
        }


def call_usage(event: Event) -> CallUsage:
    """The call a ``model/called`` event records."""
    d = event.data
    return CallUsage(
        turn=d["turn"],
        step=d["step"],
        provider=d["provider"],
        model=d["model"],
        input_tokens=d["input_tokens"],
        output_tokens=d["output_tokens"],
        latency_ms=d["latency_ms"],
        ttft_ms=d["ttft_ms"],
        stop_reason=d["stop_reason"],
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageTotals:
    """Sums over some model calls; a token total is ``None`` (unknown) when any call's count is."""

    calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    latency_ms: int = 0


def _add(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def usage_totals(events: Iterable[Event]) -> UsageTotals:
    """Totals of the ``model/called`` events among ``events`` (other types are skipped)."""
    calls, latency = 0, 0
    inputs: int | None = 0
    outputs: int | None = 0
    for event in events:
        if event.type != MODEL_CALLED:
            continue
        call = call_usage(event)
        calls += 1
        latency += call.latency_ms
        inputs = _add(inputs, call.input_tokens)
        outputs = _add(outputs, call.output_tokens)
    return UsageTotals(calls=calls, input_tokens=inputs, output_tokens=outputs, latency_ms=latency)
