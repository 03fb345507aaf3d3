"""What tracing costs per turn: ``python -m bench.tracing [--turns N] [--reps R]``.

One process, an in-memory store and the zero-latency `InstantLLM`, so a turn is nothing but stellate's own
work (sessions of 20 turns, so that the growing context is the same in every mode). Each repetition runs N
turns in every mode, modes interleaved and rotated so drift hits them alike:

- ``off``: `stellate.observability.instrument` never called (the default);
- ``no-op provider``: instrumented, with OpenTelemetry's no-op tracer and meter providers;
- ``SDK``: instrumented, with the SDK, a simple span processor and an in-memory exporter (needs the SDK).

``hooks when off`` times the observability calls one plain turn makes (a turn scope and a model-call
scope with their ``record_*`` calls) with tracing off, in a tight loop: the price of having the hooks at all.

Times are CPU time of this process (``time.process_time``), which other processes on a busy machine disturb
far less than wall-clock time; the model is instant and the store in memory, so a turn never waits.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.fakes import InstantLLM
from stellate import observability
from stellate.agent.agent import Agent
from stellate.store.memory import MemoryStore

#: Turns per session: a turn's context grows with its history, so sessions are kept short and alike.
TURNS_PER_SESSION = 20


async def time_turns(turns: int) -> float:
    """Microseconds per turn over ``turns`` plain turns on a fresh agent (a new session every 20 turns)."""
    async with Agent(MemoryStore(), llm=InstantLLM()) as agent:  # type: ignore[arg-type]
        sessions = [(await agent.create_session()).id for _ in range(-(-turns // TURNS_PER_SESSION))]
        await agent.turn(sessions[0], "warm up")
        start = time.process_time()
        for n in range(turns):
            await agent.turn(sessions[n // TURNS_PER_SESSION], "hi")
        return (time.process_time() - start) / turns * 1e6


def time_hooks(calls: int) -> float:
    """Microseconds the observability hooks of one plain turn cost with tracing off."""
    start = time.process_time()
    for _ in range(calls):
        with observability.turn_span("s", "hi") as turn:
            turn.record({"stellate.turn": 1, "stellate.seq.first": 0})
            with observability.model_span("s", "bench", "instant", turn=1, step=1) as call:
                call.record_content("gen_ai.input.messages", list)
                call.record_usage("instant", 0, 1, "stop")
                call.record_content("gen_ai.output.messages", list)
            turn.record({"stellate.seq.last": 5})
            turn.record_turn("completed", 1, 0, 1)
    return (time.process_time() - start) / calls * 1e6


def _noop() -> None:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    observability.instrument(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())


def _sdk() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    observability.instrument(tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()]))


def modes() -> dict[str, Callable[[], None] | None]:
    """The modes this environment can run (the SDK mode needs ``opentelemetry-sdk``)."""
    found: dict[str, Callable[[], None] | None] = {"off": None}
    try:
        import opentelemetry.trace
    except ImportError:
        return found
    found["no-op provider"] = _noop
    try:
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        return found
    found["SDK"] = _sdk
    return found


def measure(turns: int, reps: int) -> dict[str, Any]:
    """Median microseconds per turn for each mode, and the hooks' own cost with tracing off."""
    samples: dict[str, list[float]] = {name: [] for name in modes()}
    order = list(modes().items())
    for rep in range(reps):
        for name, setup in order[rep % len(order) :] + order[: rep % len(order)]:  # each mode leads in turn
            if setup is not None:
                setup()
            try:
                samples[name].append(asyncio.run(time_turns(turns)))
            finally:
                observability.uninstrument()
    result: dict[str, Any] = {name: statistics.median(values) for name, values in samples.items()}
    result["hooks when off"] = statistics.median(time_hooks(turns * 10) for _ in range(reps))
    return result


def render(result: dict[str, Any], turns: int, reps: int) -> str:
    """The result as a Markdown table."""
    off = result["off"]
    lines = [
        f"Tracing cost per plain turn, CPU time ({turns} turns x {reps} repetitions, in-memory store, instant model)",
        "",
        "| mode | µs per turn | compared with off |",
        "|---|---:|---:|",
    ]
    for name, value in result.items():
        if name == "off":
            ratio = ""
        elif name == "hooks when off":
            ratio = f"{value / off * 100:.2f} % of a turn"
        else:
            ratio = f"x{value / off:.2f}"
        lines.append(f"| {name} | {value:.1f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tracing", description=__doc__)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    print(render(measure(args.turns, args.reps), args.turns, args.reps))


if __name__ == "__main__":
    main()
