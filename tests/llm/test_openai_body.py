"""The OpenAI adapter's encoded body: the very bytes httpx sent for `build_body`, built from cached pieces."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from stellate.llm import LLMRequest, OutputSchema, ToolSpec
from stellate.llm import _chat_completions as chat_completions
from stellate.llm._wire import RawJSON, WireCache, dump_json, encode_object
from stellate.llm.openai import OpenAIAdapter
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from stellate.testing.mock_llm import MockLLMServer, MockReply

SEARCH = ToolSpec(name="search", description="Search the web.", parameters={"type": "object", "properties": {}})
CALL = ToolCall(id="c1", name="search", arguments='{"q": "é"}')
BROKEN = ToolCall(id="c2", name="search", arguments="{not json")


def adapter(**options: Any) -> OpenAIAdapter:
    return OpenAIAdapter("m", base_url="http://llm.invalid/v1", api_key="k", **options)


def httpx_bytes(body: dict[str, Any]) -> bytes:
    """What httpx sends for ``json=body``: the bytes every call carried before bodies were pre-encoded."""
    return httpx.Request("POST", "http://llm.invalid/v1/chat/completions", json=body).content


def assert_exact(llm: OpenAIAdapter, request: LLMRequest, *, stream: bool = True, **options: Any) -> None:
    # A fresh adapter has no cache: its build_body is the reference.
    reference = adapter(**options).build_body(request, stream=stream)
    assert llm.encode_body(request, stream=stream) == httpx_bytes(reference)


def test_json_members_are_encoded_as_inside_the_whole_object() -> None:
    body: dict[Any, Any] = {"model": "m", "messages": RawJSON(b'[{"a":1}]'), "t": 0.5, "x": "é\u2028", 3: None}
    decoded = {**body, "messages": [{"a": 1}]}
    assert encode_object(body) == dump_json(decoded) == httpx_bytes(decoded)


def test_a_growing_session_sends_exactly_what_httpx_encoded_before() -> None:
    llm = adapter()
    history: list[Message] = [SystemMessage(content="Rule one."), SystemMessage(content="Rule two.")]
    turns: list[list[Message]] = [
        [UserMessage(content="héllo \U0001f600")],
        [AssistantMessage(content="", tool_calls=(CALL, BROKEN))],
        [ToolMessage(call_id="c1", name="search", content="found"), ToolMessage(call_id="c2", name="x", content="?")],
        [SystemMessage(content="Late note.")],  # trailing: the next system message merges into it
        [SystemMessage(content="Later note."), AssistantMessage(content="done")],
        [UserMessage(content="next")],
    ]
    for new in turns:
        history += new
        assert_exact(llm, LLMRequest(messages=list(history)))
    assert json.loads(llm.encode_body(LLMRequest(messages=history), stream=True))["messages"][5] == {
        "role": "system",
        "content": "Late note.\n\nLater note.",
    }


def test_a_body_that_does_not_extend_the_last_one_is_still_exact() -> None:
    llm = adapter()
    shared: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="ok")]
    one: list[Message] = [*shared, UserMessage(content="left")]
    other: list[Message] = [*shared, UserMessage(content="right"), AssistantMessage(content="r")]
    bodies: list[list[Message]] = [one, other, one, shared[:1], [], [SystemMessage(content="s")], other, other + one]
    for messages in bodies:
        assert_exact(llm, LLMRequest(messages=messages))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"extra_body": {"messages": [{"role": "user", "content": "override"}], "model": "other", "top_p": 0.9}},
        {"extra_body": {"stream": "x", "seed": 1}},
        {"native_output": False},
    ],
)
def test_every_standard_field_and_override_is_encoded_in_place(options: dict[str, Any]) -> None:
    llm = adapter(**options)
    output = OutputSchema(name="answer", schema={"type": "object"}, description="The answer.")
    messages = [UserMessage(content="hi")]
    for stream in (True, False):
        assert_exact(llm, LLMRequest(messages=messages), stream=stream, **options)
        request = LLMRequest(messages=messages, tools=[SEARCH], output=output, temperature=0.2, max_output_tokens=9)
        assert_exact(llm, request, stream=stream, **options)


def test_each_message_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Message] = []
    to_wire = chat_completions.message_to_wire

    def counting(message: Message) -> dict[str, Any]:
        encoded.append(message)
        return to_wire(message)

    monkeypatch.setattr(chat_completions, "message_to_wire", counting)
    llm = adapter()
    session_a: list[Message] = [UserMessage(content="a")]
    session_b: list[Message] = [UserMessage(content="b")]
    for turn in range(3):  # two sessions take turns on one adapter: the array memo misses every time
        for session in (session_a, session_b):
            llm.encode_body(LLMRequest(messages=session), stream=True)
            session += [AssistantMessage(content=str(turn)), UserMessage(content=str(turn))]
    assert len(encoded) == len(set(map(id, encoded))) == 10  # every message sent (all but each list's last 2)


def test_a_session_rebuilding_its_system_messages_for_each_call_converts_only_new_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    requests: list[LLMRequest] = []
    history: list[Message] = []
    for turn in range(5):
        history.append(UserMessage(content=str(turn)))
        lead = [SystemMessage(content="prompt"), SystemMessage(content="identity")]  # new objects, same values
        requests.append(LLMRequest(messages=[*lead, *history]))
        history.append(AssistantMessage(content="ok"))
    expected = [httpx_bytes(adapter().build_body(request, stream=True)) for request in requests]
    converted: list[int] = []
    convert_all = WireCache.convert_all

    def counting(cache: WireCache[Any], messages: Sequence[Message], *, keep: Sequence[Message] | None = None) -> Any:
        converted.append(len(messages))
        return convert_all(cache, messages, keep=keep)

    monkeypatch.setattr(WireCache, "convert_all", counting)
    llm = adapter()
    assert [llm.encode_body(request, stream=True) for request in requests] == expected
    assert sum(converted) == 9  # each user and assistant message once: the previous array was reused


def test_a_partial_conversion_keeps_the_whole_transcripts_entries_when_the_cache_is_cut() -> None:
    converted: list[Message] = []

    def convert(message: Message) -> str:
        converted.append(message)
        return message.content

    cache: WireCache[str] = WireCache(convert)
    transcript: list[Message] = [UserMessage(content=str(i)) for i in range(100)]
    cache.convert_all(transcript)
    others: list[Message] = [UserMessage(content=f"other {i}") for i in range(1000)]
    cache.convert_all(others)  # another session's
    transcript.append(UserMessage(content="new"))
    cache.convert_all(transcript[-1:], keep=transcript)  # the cache is cut here: 1,101 entries for 101 messages
    converted.clear()
    assert cache.convert_all(transcript) == [m.content for m in transcript]
    assert converted == []
    cache.convert_all(others)
    assert len(converted) == 1000  # the cut did drop the other session's entries


async def test_the_server_receives_the_encoded_body_as_json(server: MockLLMServer) -> None:
    server.push(MockReply(text="ok"), MockReply(text="ok"))
    history: list[Message] = [SystemMessage(content="s"), UserMessage(content="ünïcode")]
    async with OpenAIAdapter("m", base_url=server.openai_base_url, api_key="k") as llm:
        await llm.complete(LLMRequest(messages=history))
        [_ async for _ in llm.stream(LLMRequest(messages=[*history, UserMessage(content="again")]))]
    for request in server.requests:
        assert request.headers["content-type"] == "application/json"
    assert server.requests[1].body["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "ünïcode"},
        {"role": "user", "content": "again"},
    ]
