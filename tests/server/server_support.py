"""Helpers of the server tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stellate import Agent, tool
from stellate.llm.scripted import ScriptedLLM
from stellate.llm.types import LLMRequest
from stellate.server.keys import KeyRing
from stellate.store import BaseStore


@tool
def add(a: int, b: int) -> str:
    """Add two numbers.

    Args:
        a: First.
        b: Second.
    """
    return str(a + b)


def echo(request: LLMRequest) -> str:
    return f"echo: {request.messages[-1].content}"


def make_agent(store: BaseStore, llm: ScriptedLLM, **options: Any) -> Agent:
    return Agent(store, llm=llm, tools=[add], **options)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass(frozen=True, slots=True)
class Keys:
    ring: KeyRing
    alpha: str
    beta: str
    alpha_read_only: str
