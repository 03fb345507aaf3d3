"""Spans, metrics and log records: the trace of a tool-calling turn with a fork, checked with the SDK's in-memory
exporter; nothing recorded (and no content) unless asked."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from stellate import Agent, observability, tool
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.store.memory import MemoryStore


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: Its name.
    """
    return f"{city}: 870000 inhabitants"


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("kaboom")


class Telemetry:
    def __init__(self, spans: Any, metrics: Any) -> None:
        self.spans, self.metrics = spans, metrics

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def tree(self) -> list[str]:
        """Finished spans as indented names, children in start order."""
        spans = self.finished()
        children: dict[int | None, list[Any]] = {}
        for span in spans:
            parent = span.parent.span_id if span.parent is not None else None
            children.setdefault(parent, []).append(span)
        lines: list[str] = []

        def walk(parent: int | None, depth: int) -> None:
            for span in sorted(children.get(parent, []), key=lambda s: s.start_time):
                lines.append("  " * depth + span.name)
                walk(span.context.span_id, depth + 1)

        walk(None, 0)
        return lines

    def metric_points(self) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        data = self.metrics.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def telemetry(require_extra: Callable[[str, str], ModuleType]) -> Iterator[Telemetry]:
    require_extra("opentelemetry.sdk", "otel")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    observability.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    try:
        yield Telemetry(spans, reader)
    finally:
        observability.uninstrument()


def fork_and_lookup() -> ScriptedLLM:
    calls = [tool_call("create_session", {"label": "Budget"}, id="c1"), tool_call("lookup", {"city": "Delft"}, id="c2")]
    return ScriptedLLM([Reply(text="Let me check.", tool_calls=calls), "Delft has 870000 inhabitants."])


async def test_a_tool_calling_turn_with_a_fork_gives_this_span_tree(telemetry: Telemetry) -> None:
    async with Agent(MemoryStore(), llm=fork_and_lookup(), tools=[lookup], builtin_tools=["create_session"]) as agent:
        root = await agent.create_session(label="Trip")
        await agent.turn(root.id, "How big is Delft?")
    assert telemetry.tree() == [
        "invoke_agent stellate",
        "  chat scripted-model",
        "  execute_tool create_session",
        "    fork_session",
        "  execute_tool lookup",
        "  chat scripted-model",
    ]
    by_name = {span.name: span for span in telemetry.finished()}
    turn = dict(by_name["invoke_agent stellate"].attributes)
    assert turn["gen_ai.operation.name"] == "invoke_agent"
    assert turn["gen_ai.conversation.id"] == turn["stellate.session.id"] == root.id
    assert (turn["stellate.turn"], turn["stellate.turn.reason"], turn["stellate.turn.rounds"]) == (1, "completed", 2)
    assert turn["stellate.seq.first"] < turn["stellate.seq.last"]
    chats = [s for s in telemetry.finished() if s.name.startswith("chat")]
    first = dict(min(chats, key=lambda s: s.start_time).attributes)
    assert first["gen_ai.operation.name"] == "chat"
    assert (first["gen_ai.provider.name"], first["gen_ai.request.model"]) == ("scripted", "scripted-model")
    assert first["gen_ai.response.model"] == "scripted-model"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["gen_ai.usage.input_tokens"] > 0 and first["gen_ai.usage.output_tokens"] > 0
    assert (first["stellate.turn"], first["stellate.step"]) == (1, 1)
    tool_attributes = dict(by_name["execute_tool lookup"].attributes)
    assert (tool_attributes["gen_ai.tool.name"], tool_attributes["gen_ai.tool.call.id"]) == ("lookup", "c2")
    fork = dict(by_name["fork_session"].attributes)
    assert fork["stellate.session.id"] == root.id and fork["stellate.fork.child_id"] != root.id
    contents = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"}
    contents.add("gen_ai.tool.call.result")
    assert not [key for span in telemetry.finished() for key in span.attributes if key in contents]


async def test_content_is_recorded_only_when_asked(telemetry: Telemetry) -> None:
    observability.instrument(tracer_provider=_provider(telemetry), include_content=True)
    async with Agent(MemoryStore(), llm=fork_and_lookup(), tools=[lookup], builtin_tools=["create_session"]) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "How big is Delft?")
    by_name = {span.name: span for span in telemetry.finished()}
    turn_input = json.loads(by_name["invoke_agent stellate"].attributes["gen_ai.input.messages"])
    assert turn_input == [{"role": "user", "parts": [{"type": "text", "content": "How big is Delft?"}]}]
    lookup_span = by_name["execute_tool lookup"].attributes
    assert json.loads(lookup_span["gen_ai.tool.call.arguments"]) == {"city": "Delft"}
    assert lookup_span["gen_ai.tool.call.result"] == "Delft: 870000 inhabitants"
    chats = sorted((s for s in telemetry.finished() if s.name.startswith("chat")), key=lambda s: s.start_time)
    output = json.loads(chats[-1].attributes["gen_ai.output.messages"])
    assert output[0]["parts"] == [{"type": "text", "content": "Delft has 870000 inhabitants."}]
    assert json.loads(chats[0].attributes["gen_ai.input.messages"])[-1]["parts"][0]["content"] == "How big is Delft?"


def _provider(telemetry: Telemetry) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(telemetry.spans))
    return provider


async def test_metrics_count_tokens_durations_and_tool_errors(telemetry: Telemetry) -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("broken")]), "sorry"])
    async with Agent(MemoryStore(), llm=llm, tools=[broken]) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "Try it")
    points = telemetry.metric_points()
    [turns] = points["stellate.turn.duration"]
    assert turns.count == 1 and dict(turns.attributes) == {"stellate.turn.reason": "completed"}
    assert sum(p.count for p in points["gen_ai.client.operation.duration"]) == 2
    token_types = {p.attributes["gen_ai.token.type"] for p in points["gen_ai.client.token.usage"]}
    assert token_types == {"input", "output"}
    [errors] = points["stellate.tool.errors"]
    assert errors.value == 1 and dict(errors.attributes) == {"gen_ai.tool.name": "broken"}
    failed = next(s for s in telemetry.finished() if s.name == "execute_tool broken")
    assert failed.status.status_code.name == "ERROR"


async def test_usage_a_provider_did_not_report_is_left_out_not_counted_as_zero(telemetry: Telemetry) -> None:
    async with Agent(MemoryStore(), llm=ScriptedLLM(["quiet"], estimate_usage=False)) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "Hi")
    [chat] = [s for s in telemetry.finished() if s.name.startswith("chat")]
    assert not [key for key in chat.attributes if key.startswith("gen_ai.usage.")]
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.client.token.usage" not in telemetry.metric_points()


async def test_without_instrument_nothing_is_traced(require_extra: Callable[[str, str], ModuleType]) -> None:
    require_extra("opentelemetry.sdk", "otel")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    observability.instrument(tracer_provider=provider)
    observability.uninstrument()
    assert not observability.is_instrumented()
    async with Agent(MemoryStore(), llm=fork_and_lookup(), tools=[lookup], builtin_tools=["create_session"]) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "How big is Delft?")
    assert spans.get_finished_spans() == ()


async def test_every_log_record_names_its_session(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM([Reply(tool_calls=[tool_call("broken")]), "sorry"])
    async with Agent(MemoryStore(), llm=llm, tools=[broken]) as agent:
        root = await agent.create_session()
        with caplog.at_level(logging.DEBUG, logger="stellate"):
            await agent.turn(root.id, "Try it")
            child = await agent.fork_session(root.id, label="Child")
    records = [r for r in caplog.records if r.name.startswith("stellate")]
    assert {r.getMessage() for r in records} >= {"turn 1 started", f"tool 'broken' raised (call {_call_id(llm)})"}
    assert all(getattr(r, "session_id", None) == root.id for r in records)
    assert any(child.id in r.getMessage() for r in records)
    assert observability.current_session_id() is None


def _call_id(llm: ScriptedLLM) -> str:
    [call] = [m for m in llm.requests[1].messages if m.role == "tool"]
    return str(call.call_id)


def test_instrument_without_opentelemetry_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from stellate import observability\n"
        "try:\n    observability.instrument()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == 'tracing needs OpenTelemetry: pip install "stellate[otel]"'


async def test_a_failed_model_call_marks_its_spans_and_metric(telemetry: Telemetry) -> None:
    from stellate.errors import ProviderError

    llm = ScriptedLLM([ProviderError("down", provider="scripted")])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        with pytest.raises(ProviderError):
            await agent.turn(root.id, "Hello?")
    assert telemetry.tree() == ["invoke_agent stellate", "  chat scripted-model"]
    assert {span.status.status_code.name for span in telemetry.finished()} == {"ERROR"}
    [call] = telemetry.metric_points()["gen_ai.client.operation.duration"]
    assert call.attributes["error.type"] == "ProviderError"
    assert "stellate.turn.duration" in telemetry.metric_points()
