"""After a decision, both providers' loopback mocks receive exactly the tool results the decision made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stellate import Agent, tool
from stellate.llm.anthropic import AnthropicAdapter
from stellate.llm.openai import OpenAIAdapter
from stellate.log.messages import ToolCall
from stellate.testing.mock_llm import MockLLMServer, MockReply


@tool
def send_mail(to: str) -> str:
    """Send a mail.

    Args:
        to: The address.
    """
    return f"sent to {to}"


CALLS = [
    ToolCall(id="call_a", name="send_mail", arguments='{"to": "ann@example.com"}'),
    ToolCall(id="call_b", name="send_mail", arguments='{"to": "bob@example.com"}'),
]
DENIED = "The user denied this call of send_mail; it was not run. Their reason: not Bob"


def adapter(kind: str, server: MockLLMServer) -> OpenAIAdapter | AnthropicAdapter:
    if kind == "openai":
        return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test")
    return AnthropicAdapter("claude-mock", base_url=server.url, api_key="sk-ant-test")


def tool_results(kind: str, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(call id, content, is_error) of every tool result in a request body, in its own wire format."""
    if kind == "openai":
        return [(m["tool_call_id"], m["content"], False) for m in body["messages"] if m["role"] == "tool"]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return [
        (
            b["tool_use_id"],
            b["content"] if isinstance(b["content"], str) else b["content"][0]["text"],
            b.get("is_error", False),
        )
        for b in blocks
        if b["type"] == "tool_result"
    ]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_provider_receives_the_approved_edited_and_denied_results(kind: str, tmp_path: Path) -> None:
    async with MockLLMServer([MockReply(tool_calls=CALLS), MockReply(text="one sent, one not")]) as server:
        async with (
            adapter(kind, server) as llm,
            Agent(f"sqlite:///{tmp_path / 's.db'}", llm=llm, tools=[send_mail], approvals={"send_mail": True}) as agent,
        ):
            sid = (await agent.create_session(label="mail")).id
            assert (await agent.turn(sid, "mail them")).reason == "awaiting_approval"
            assert len(server.requests) == 1
            await agent.approve(sid, "call_a", arguments='{"to": "ann@example.org"}')
            result = await agent.deny(sid, "call_b", reason="not Bob")
        assert result is not None and result.content == "one sent, one not"
        assert len(server.requests) == 2
        results = tool_results(kind, server.requests[-1].body)
    expected_error = kind == "anthropic"  # OpenAI's wire format has no error flag for a tool result
    assert results == [("call_a", "sent to ann@example.org", False), ("call_b", DENIED, expected_error)]
