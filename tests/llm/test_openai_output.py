"""Structured output through the OpenAI-compatible adapter: ``response_format`` over real HTTP, or the tool fallback."""

from __future__ import annotations

from pydantic import BaseModel

from stellate import Agent
from stellate.llm import tool_call
from stellate.llm.openai import OpenAIAdapter
from stellate.session.output import OUTPUT_TOOL_NAME
from stellate.store.memory import MemoryStore
from stellate.testing.mock_llm import MockLLMServer, MockReply


class Weather(BaseModel):
    """Today's weather."""

    city: str
    celsius: float


async def test_native_mode_sends_a_json_schema_response_format(server: MockLLMServer) -> None:
    server.push(MockReply(text='{"city": "Delft", "celsius": 11.5}'))
    llm = OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test")
    async with llm, Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "Weather in Delft?", output_type=Weather)
    assert result.output == Weather(city="Delft", celsius=11.5)
    body = server.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    spec = body["response_format"]["json_schema"]
    assert (spec["name"], spec["strict"], spec["description"]) == ("Weather", False, "Today's weather.")
    assert spec["schema"]["required"] == ["city", "celsius"]
    assert "tools" not in body


async def test_without_native_output_the_answer_comes_as_a_tool_call(server: MockLLMServer) -> None:
    server.push(MockReply(tool_calls=[tool_call(OUTPUT_TOOL_NAME, {"city": "Delft", "celsius": 9})]))
    llm = OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test", native_output=False)
    async with llm, Agent(MemoryStore(), llm=llm) as agent:
        root = await agent.create_session()
        result = await agent.turn(root.id, "Weather in Delft?", output_type=Weather)
    assert result.output == Weather(city="Delft", celsius=9.0)
    body = server.requests[0].body
    assert "response_format" not in body
    assert [t["function"]["name"] for t in body["tools"]] == [OUTPUT_TOOL_NAME]
