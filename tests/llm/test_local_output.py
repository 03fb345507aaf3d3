"""Structured output from a real local model: llama.cpp constrains the reply with a grammar built from the schema."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from types import ModuleType

from pydantic import BaseModel

from stellate import Agent
from stellate.store.memory import MemoryStore


class City(StrEnum):
    AMSTERDAM = "Amsterdam"
    PARIS = "Paris"
    BERLIN = "Berlin"


class Verdict(BaseModel):
    city: City
    is_capital: bool


async def test_the_local_model_answers_in_the_schema(require_extra: Callable[[str, str], ModuleType]) -> None:
    local = require_extra("stellate.llm.local", "local")
    async with local.LlamaCppAdapter(n_ctx=512, n_threads=2) as llm:
        assert llm.supports_native_output()
        async with Agent(MemoryStore(), llm=llm) as agent:
            root = await agent.create_session()
            result = await agent.turn(root.id, "Which city is the capital of France?", output_type=Verdict)
    assert isinstance(result.output, Verdict)
    assert result.rounds == 1  # the grammar leaves no room for an invalid answer
