"""Structured output: native JSON-schema mode, the ``final_result`` tool fallback, retries, the log record."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, Field

from stellate import Agent, tool
from stellate.engine.events import OutputReady, TextChunk, TurnFinished
from stellate.errors import InvariantError, OutputValidationError, UsageError
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.log import check_log, derive_transcript
from stellate.log.events import Event, make_event
from stellate.session import Session, SessionRuntime
from stellate.session.output import OUTPUT_TOOL_NAME, OutputContract
from stellate.store import SessionId
from stellate.store.memory import MemoryStore


class City(BaseModel):
    """A city and its population."""

    name: str
    population: int = Field(ge=0)


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: Its name.
    """
    return f"{city}: 870000 inhabitants"


async def log_of(agent: Agent, sid: str) -> list[Event]:
    return await (await agent.store()).read_events(SessionId(sid))


def answer(**arguments: Any) -> Reply:
    return Reply(tool_calls=[tool_call(OUTPUT_TOOL_NAME, arguments)])


async def test_tool_mode_returns_the_validated_object_and_records_it() -> None:
    llm = ScriptedLLM([answer(name="Amsterdam", population=870000), "Anything else?"])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session(label="t")
        result = await agent.turn(root.id, "Largest Dutch city?", output_type=City)
        assert result.output == City(name="Amsterdam", population=870000)
        assert result.reason == "completed"
        assert llm.requests[0].output is None
        assert [t.name for t in llm.requests[0].tools] == [OUTPUT_TOOL_NAME]
        events = await log_of(agent, root.id)
        [recorded] = [e for e in events if e.type == "output/validated"]
        assert recorded.data == {
            "turn": 1,
            "name": "City",
            "mode": "tool",
            "value": {"name": "Amsterdam", "population": 870000},
        }
        assert events[-1].type == "turn/end" and events[-2] is recorded
        check_log(events)
        # the next turn reads a valid transcript (the answer call and its result) and needs no output type
        assert (await agent.turn(root.id, "Thanks")).output is None
        assert [m.role for m in llm.requests[1].messages[-4:]] == ["user", "assistant", "tool", "user"]


async def test_tool_mode_sends_bad_arguments_back_and_accepts_the_fix() -> None:
    llm = ScriptedLLM([answer(name="Amsterdam", population=-1), answer(name="Amsterdam", population=5)])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "City?", output_type=City)
        assert result.output == City(name="Amsterdam", population=5)
        assert result.rounds == 2
        error = llm.requests[1].messages[-1]
        assert error.role == "tool" and "population" in error.content and "greater than or equal" in error.content


async def test_tool_mode_answers_with_text_get_a_reminder() -> None:
    llm = ScriptedLLM(["Amsterdam, about 870k people.", answer(name="Amsterdam", population=870000)])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "City?", output_type=City)
        assert result.output.population == 870000
        reminder = llm.requests[1].messages[-1]
        assert reminder.role == "user" and OUTPUT_TOOL_NAME in reminder.content
        [correction] = [e for e in await log_of(agent, root.id) if e.data.get("correction")]
        assert correction.type == "user/message"


async def test_native_mode_sends_the_schema_and_retries_invalid_json() -> None:

    llm = ScriptedLLM(['{"name": "Amsterdam"}', '{"name": "Amsterdam", "population": 1}'], native_output=True)
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "City?", output_type=City)
        assert result.output == City(name="Amsterdam", population=1)
        request = llm.requests[0]
        assert request.output is not None and request.output.name == "City"
        assert request.output.schema["required"] == ["name", "population"]
        assert request.tools == ()
        retry = llm.requests[1].messages[-1]
        assert retry.role == "user" and "population: required but missing" in retry.content
        [recorded] = [e for e in await log_of(agent, root.id) if e.type == "output/validated"]
        assert recorded.data["mode"] == "native"


async def test_native_mode_accepts_a_fenced_answer_after_tool_calls() -> None:
    llm = ScriptedLLM(
        [Reply(tool_calls=[tool_call("lookup", {"city": "Ams"})]), '```json\n{"name": "A", "population": 2}\n```'],
        native_output=True,
    )
    async with Agent(MemoryStore(), llm=llm, tools=[lookup]) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "City?", output_type=City)
        assert (result.output, result.tool_calls) == (City(name="A", population=2), 1)
        assert [t.name for t in llm.requests[0].tools] == ["lookup"]


async def test_retries_exhausted_raise_a_typed_error_and_leave_a_valid_log() -> None:
    llm = ScriptedLLM(["not json", "still not", "nope"], native_output=True, default="fine")
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        with pytest.raises(OutputValidationError) as caught:
            await agent.turn(root.id, "City?", output_type=OutputContract(City, retries=2))
        assert caught.value.code == "output_invalid"
        assert caught.value.details["attempts"] == 3
        assert len(llm.requests) == 3
        events = await log_of(agent, root.id)
        check_log(events)
        assert events[-1].data["reason"] == "error"
        assert events[-1].data["error"]["code"] == "output_invalid"
        assert not [e for e in events if e.type == "output/validated"]
        assert (await agent.turn(root.id, "Try again")).content == "fine"


async def test_round_limit_without_an_answer_is_an_output_error() -> None:
    llm = ScriptedLLM(default=Reply(tool_calls=[tool_call("lookup", {"city": "x"})]))
    async with Agent(MemoryStore(), llm=llm, tools=[lookup], max_rounds=2) as agent:
        root = await agent.create_session()
        with pytest.raises(OutputValidationError):
            await agent.turn(root.id, "City?", output_type=City)
        check_log(await log_of(agent, root.id))


async def test_stream_yields_text_then_the_typed_result() -> None:
    llm = ScriptedLLM(['{"name": "Amsterdam", "population": 3}'], native_output=True)
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        events = [e async for e in agent.stream(root.id, "City?", output_type=City)]
        kinds = [e.type for e in events]
        assert kinds.index("text") < kinds.index("output") == len(kinds) - 2
        assert "".join(e.text for e in events if isinstance(e, TextChunk)) == '{"name": "Amsterdam", "population": 3}'
        ready = events[-2]
        assert isinstance(ready, OutputReady) and ready.output == City(name="Amsterdam", population=3)
        assert isinstance(events[-1], TurnFinished) and events[-1].result.output is ready.output


async def test_non_object_types_travel_wrapped() -> None:
    llm = ScriptedLLM([answer(result=[1, 2, 3])])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "Numbers?", output_type=list[int])
        assert result.output == [1, 2, 3]
        assert llm.requests[0].tools[0].parameters["required"] == ["result"]


async def test_dataclass_output_is_recorded_as_json() -> None:
    @dataclass
    class Point:
        x: int
        y: int

    llm = ScriptedLLM([answer(x=1, y=2)])
    async with Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        assert (await agent.turn(root.id, "Point?", output_type=Point)).output == Point(1, 2)
        [recorded] = [e for e in await log_of(agent, root.id) if e.type == "output/validated"]
        assert recorded.data["value"] == {"x": 1, "y": 2}


async def test_a_tool_named_final_result_clashes() -> None:
    @tool
    def final_result() -> str:
        """Taken."""
        return ""

    async with Agent(MemoryStore(), llm=ScriptedLLM(), tools=[final_result]) as agent:
        root = await agent.create_session()
        with pytest.raises(UsageError) as caught:
            await agent.turn(root.id, "City?", output_type=City)
        assert caught.value.code == "tool_name_taken"


async def test_native_mode_is_refused_for_an_adapter_without_it() -> None:
    async with Agent(MemoryStore(), llm=ScriptedLLM()) as agent:
        root = await agent.create_session()
        with pytest.raises(UsageError):
            await agent.turn(root.id, "City?", output_type=OutputContract(City, mode="native"))


async def test_session_send_with_output_type_makes_one_call() -> None:
    store = MemoryStore()
    llm = ScriptedLLM([answer(name="Utrecht", population=360000), Reply(text="no tool")])
    session = await Session.create(store, SessionRuntime(llm=llm))
    result = await session.send("City?", output_type=City)
    assert result.output == City(name="Utrecht", population=360000)
    with pytest.raises(OutputValidationError):
        await session.send("Again?", output_type=City)
    events = await store.read_events(session.id)
    check_log(events)
    assert [e.data["value"]["name"] for e in events if e.type == "output/validated"] == ["Utrecht"]
    last = derive_transcript(events).messages[-1]  # the failed turn had output: it stays in the transcript
    assert (last.role, last.content) == ("assistant", "no tool")


async def test_output_event_outside_its_turn_is_refused() -> None:
    store = MemoryStore()
    session = await Session.create(store, SessionRuntime(llm=ScriptedLLM(default="hi")))
    await session.send("hello")
    with pytest.raises(InvariantError):
        await store.append(
            session.id, [make_event("output/validated", {"turn": 1, "name": "x", "mode": "tool", "value": 1})]
        )
    assert json.dumps(OutputContract(City).schema)  # plain JSON, sendable as is


async def test_context_at_shows_the_correction_the_model_answered() -> None:
    store = MemoryStore()
    llm = ScriptedLLM(['{"name": "Amsterdam"}', '{"name": "Amsterdam", "population": 1}'], native_output=True)
    async with Agent(store, llm=llm) as agent:
        root = await agent.create_session()
        await agent.turn(root.id, "City?", output_type=City)
    session = await Session.load(store, SessionId(root.id), SessionRuntime(llm=llm))
    replies = [e.seq for e in await store.read_events(session.id) if e.type == "assistant/message"]
    context = await session.context_at(replies[-1])
    assert [m.role for m in context[-3:]] == ["user", "assistant", "user"]
    assert context[-1].content == llm.requests[1].messages[-1].content
    assert "population: required but missing" in context[-1].content


def test_the_sync_facade_passes_the_output_type() -> None:
    from stellate.sync import SyncAgent

    llm = ScriptedLLM([answer(name="Delft", population=100), answer(name="Leiden", population=120)])
    with SyncAgent(MemoryStore(), llm=llm) as agent:
        root = agent.create_session()
        assert agent.turn(root.id, "City?", output_type=City).output == City(name="Delft", population=100)
        events = list(agent.stream(root.id, "Another?", output_type=City))
    assert [e.output for e in events if isinstance(e, OutputReady)] == [City(name="Leiden", population=120)]
