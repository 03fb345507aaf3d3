"""Images in turns: sent in each provider's format (exact request bodies at the loopback mocks), stored once beside
the log, inherited by forks, carried by export and import, and refused with typed errors when bad."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from stellate import Agent
from stellate.errors import LLMError, UsageError
from stellate.llm.anthropic import AnthropicAdapter
from stellate.llm.openai import OpenAIAdapter
from stellate.store import SessionId, export_session, import_session
from stellate.store.sqlite import SqliteStore
from stellate.testing.images import png
from stellate.testing.mock_llm import MockLLMServer, MockReply

RED, BLUE = png(4, 3, (200, 40, 40)), png(2, 2, (0, 0, 255))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def openai(server: MockLLMServer) -> OpenAIAdapter:
    return OpenAIAdapter("gpt-mock", base_url=server.openai_base_url, api_key="sk-test", timeout=5.0)


def anthropic(server: MockLLMServer) -> AnthropicAdapter:
    return AnthropicAdapter("claude-mock", base_url=server.url, api_key="sk-ant-test", timeout=5.0)


def openai_user(text: str, *images: bytes) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(i)}"}} for i in images]
    return {"role": "user", "content": parts}


@pytest.fixture
async def server() -> Any:
    async with MockLLMServer() as running:
        yield running


async def test_openai_gets_image_url_parts_with_data_urls(server: MockLLMServer, tmp_path: Path) -> None:
    """A user message with images is a list of text and ``image_url`` parts; the next turn sends them again."""
    server.push(MockReply(text="A red square."), MockReply(text="Yes."))
    async with openai(server) as llm, Agent(f"sqlite:///{tmp_path / 's.db'}", llm=llm) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "What is this?", images=[RED])
        await agent.turn(root.id, "Sure?")
    first, second = (r.body["messages"] for r in server.requests)
    assert first[-1] == openai_user("What is this?", RED)
    assert second[-3:] == [
        openai_user("What is this?", RED),
        {"role": "assistant", "content": "A red square."},
        {"role": "user", "content": "Sure?"},
    ]


async def test_anthropic_gets_base64_image_blocks_before_the_text(server: MockLLMServer) -> None:
    """Anthropic's format: ``{type: image, source: {type: base64, media_type, data}}`` blocks, then the text."""
    server.push(MockReply(text="Two squares."))
    async with anthropic(server) as llm, Agent("memory://", llm=llm) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "Compare", images=[RED, BLUE])
    assert server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(RED)}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(BLUE)}},
                {"type": "text", "text": "Compare"},
            ],
        }
    ]


async def test_the_log_holds_references_and_the_store_holds_the_bytes_once(tmp_path: Path) -> None:
    """The user message event refers to the image by sha256 with its size; the same image twice is one blob."""
    from stellate.llm.scripted import ScriptedLLM

    url = f"sqlite:///{tmp_path / 's.db'}"
    async with Agent(url, llm=ScriptedLLM(["one", "two"])) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "a", images=[RED])
        await agent.turn(root.id, "b", images=[RED])
    store = await SqliteStore.open(url)
    try:
        events = await store.read_events(SessionId(root.id), types=["user/message"])
        sha = hashlib.sha256(RED).hexdigest()
        expected = {"sha256": sha, "media_type": "image/png", "bytes": len(RED), "width": 4, "height": 3}
        assert [e.data["images"] for e in events] == [[expected], [expected]]
        assert RED not in b"".join(e.to_json().__repr__().encode() for e in events)
        assert (await store.get_blob(sha)).data == RED
        assert await store.delete_unreferenced_blobs(grace_ms=0) == []
    finally:
        await store.close()


async def test_a_fork_sends_the_images_of_its_inherited_prefix(server: MockLLMServer, tmp_path: Path) -> None:
    """A child that inherits its source's context by reference sends the source's image to the model."""
    server.push(MockReply(text="Red."), MockReply(text="Still red."))
    async with openai(server) as llm, Agent(f"sqlite:///{tmp_path / 's.db'}", llm=llm) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "Colour?", images=[RED])
        child = await agent.fork_session(root.id, label="again", context="inherit")
        await agent.turn(child.id, "And now?")
    assert server.requests[1].body["messages"][-3] == openai_user("Colour?", RED)


async def test_export_and_import_carry_the_images(server: MockLLMServer, tmp_path: Path) -> None:
    """An exported session with images imports into another database and its next call sends them."""
    server.push(MockReply(text="Blue."), MockReply(text="Yes, blue."))
    async with openai(server) as llm, Agent(f"sqlite:///{tmp_path / 'a.db'}", llm=llm) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "Colour?", images=[BLUE])
        await export_session(await agent.store(), SessionId(root.id), tmp_path / "s.jsonl")
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert '"stellate": "blob"' in lines[-1]
    target = await SqliteStore.open(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        await import_session(target, tmp_path / "s.jsonl")
    finally:
        await target.close()
    async with openai(server) as llm, Agent(f"sqlite:///{tmp_path / 'b.db'}", llm=llm) as agent:
        await agent.turn(root.id, "Sure?")
    assert server.requests[1].body["messages"][-3] == openai_user("Colour?", BLUE)


async def test_an_export_whose_blob_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    """Import checks each blob line against its sha256 and writes nothing when one is wrong."""
    from stellate.errors import FormatError
    from stellate.llm.scripted import ScriptedLLM

    async with Agent("memory://", llm=ScriptedLLM(["ok"])) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "x", images=[RED])
        await export_session(await agent.store(), SessionId(root.id), tmp_path / "s.jsonl")
    text = (tmp_path / "s.jsonl").read_text().replace(b64(RED), b64(BLUE))
    (tmp_path / "bad.jsonl").write_text(text)
    target = await SqliteStore.open(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        with pytest.raises(FormatError, match="does not match its sha256"):
            await import_session(target, tmp_path / "bad.jsonl")
        assert await target.list_sessions() == []
        assert await target.has_blobs([hashlib.sha256(BLUE).hexdigest()]) == set()
    finally:
        await target.close()


async def test_a_model_that_cannot_see_images_refuses_before_anything_is_written(require_extra: Any) -> None:
    """The local llama.cpp adapter declines images: ``images_unsupported``, and the log stays as it was."""
    require_extra("llama_cpp", "local")
    from stellate.llm.local import LlamaCppAdapter

    async with Agent("memory://", llm=LlamaCppAdapter()) as agent:
        root = await agent.create_session(label="look")
        before = await (await agent.store()).read_events(SessionId(root.id))
        with pytest.raises(LLMError) as caught:
            await agent.turn(root.id, "What is this?", images=[RED])
        assert caught.value.code == "images_unsupported"
        assert await (await agent.store()).read_events(SessionId(root.id)) == before


async def test_the_local_adapter_refuses_a_history_with_images(require_extra: Any) -> None:
    """Sent a context that holds an image anyway (a fork of a session that had one), it raises the same code."""
    require_extra("llama_cpp", "local")
    from stellate.llm.local import LlamaCppAdapter
    from stellate.llm.types import LLMRequest
    from stellate.log.images import image_ref_of
    from stellate.log.messages import UserMessage

    request = LLMRequest(messages=[UserMessage(content="x", images=(image_ref_of(RED),))])
    with pytest.raises(LLMError) as caught:
        await LlamaCppAdapter().complete(request)
    assert caught.value.code == "images_unsupported"


async def test_bad_images_are_refused_with_typed_codes_and_nothing_is_written(tmp_path: Path) -> None:
    """Not an image, too big, a path outside the allowed directory: each a `UsageError` with its code."""
    from dataclasses import replace

    from stellate.llm.scripted import ScriptedLLM

    outside = tmp_path / "outside.png"
    outside.write_bytes(RED)
    (tmp_path / "allowed").mkdir()
    async with Agent("memory://", llm=ScriptedLLM(["never"])) as agent:
        agent.image_policy = replace(agent.image_policy, max_bytes=len(RED) - 1, read_root=tmp_path / "allowed")
        root = await agent.create_session(label="look")
        cases = {b"just text": "not_an_image", RED: "image_too_large", str(outside): "image_path_refused"}
        for source, code in cases.items():
            with pytest.raises(UsageError) as caught:
                await agent.turn(root.id, "x", images=[source])
            assert caught.value.code == code
        assert [e.type for e in await (await agent.store()).read_events(SessionId(root.id))] == ["session/created"]


async def test_tool_result_images_go_to_anthropic_and_are_named_to_openai(server: MockLLMServer) -> None:
    """Anthropic takes image blocks inside a ``tool_result``; chat completions takes text only, so a note says so."""
    from stellate.llm.types import LLMRequest
    from stellate.log.images import image_ref_of
    from stellate.log.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage

    call = ToolCall(id="c1", name="snap", arguments="{}")
    result = ToolMessage(call_id="c1", name="snap", content="here", images=(image_ref_of(RED),))
    messages = [UserMessage(content="snap it"), AssistantMessage(tool_calls=(call,)), result]
    server.push(MockReply(text="ok"), MockReply(text="ok"))
    async with anthropic(server) as claude, openai(server) as gpt:
        await claude.complete(LLMRequest(messages=messages))
        await gpt.complete(LLMRequest(messages=messages))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(RED)}}
    assert server.requests[0].body["messages"][-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [{"type": "text", "text": "here"}, image],
            "is_error": False,
        }
    ]
    assert server.requests[1].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "here\n\n[1 image(s) of this result not shown: this API takes images in user messages only]",
    }


async def test_a_cold_open_past_the_fold_segments_keeps_the_images(tmp_path: Path) -> None:
    """A long log is reopened from stored fold segments; the early image is still in the transcript."""
    from stellate.llm.scripted import ScriptedLLM

    url = f"sqlite:///{tmp_path / 's.db'}"
    async with Agent(url, llm=ScriptedLLM(["ok"] * 100)) as agent:
        root = await agent.create_session(label="long")
        await agent.turn(root.id, "first", images=[RED])
        for n in range(90):
            await agent.turn(root.id, f"turn {n}")
    async with Agent(url, llm=ScriptedLLM(["ok"])) as agent:
        assert await (await agent.store()).read_fold_segments(SessionId(root.id))  # the open reads them
        messages = await agent.list_messages(root.id)
    assert [i.sha256 for i in messages[0].images] == [hashlib.sha256(RED).hexdigest()]  # type: ignore[union-attr]


async def test_after_a_cold_open_from_segments_the_next_call_still_sends_the_early_image(tmp_path: Path) -> None:
    """The image of turn 1, kept in a stored fold segment, reaches the model in a fresh process's next call."""
    from stellate.llm.scripted import ScriptedLLM
    from stellate.llm.types import LLMRequest
    from stellate.log.messages import UserMessage

    url = f"sqlite:///{tmp_path / 's.db'}"
    async with Agent(url, llm=ScriptedLLM(["ok"] * 100)) as agent:
        root = await agent.create_session(label="long")
        await agent.turn(root.id, "first", images=[RED])
        for n in range(90):
            await agent.turn(root.id, f"turn {n}")

    def first_image(request: LLMRequest) -> str:
        first = next(m for m in request.messages if isinstance(m, UserMessage))
        return "sent" if first.images and first.images[0].data == RED else "missing"

    async with Agent(url, llm=ScriptedLLM(default=first_image)) as agent:
        assert (await agent.turn(root.id, "still there?")).content == "sent"
        child = await agent.fork_session(root.id, label="kid", context="inherit")
        assert (await agent.turn(child.id, "and here?")).content == "sent"


def test_the_sync_facade_takes_images() -> None:
    """`SyncAgent.turn(images=...)` passes them on like `Agent.turn`."""
    from stellate.llm.scripted import ScriptedLLM
    from stellate.sync import SyncAgent

    with SyncAgent("memory://", llm=ScriptedLLM(default=lambda r: str(len(r.messages[-1].images)))) as agent:
        root = agent.create_session(label="look")
        assert agent.turn(root.id, "two", images=[RED, BLUE]).content == "2"
        spare = agent.put_image(png(9, 9))
        assert agent.get_image(spare.sha256).data == png(9, 9)
        assert agent.delete_unreferenced_images(grace_ms=0) == [spare.sha256]


async def test_unreferenced_images_are_swept_and_referenced_ones_kept() -> None:
    """`Agent.delete_unreferenced_images` removes an image put ahead but never sent, keeps the one a turn used."""
    from stellate.llm.scripted import ScriptedLLM

    async with Agent("memory://", llm=ScriptedLLM(["ok"])) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "x", images=[RED])
        spare = await agent.put_image(BLUE)
        assert await agent.delete_unreferenced_images(grace_ms=0) == [spare.sha256]
        assert (await agent.get_image(hashlib.sha256(RED).hexdigest())).data == RED


async def test_a_tool_that_returns_images_has_them_sent_to_anthropic(server: MockLLMServer) -> None:
    """`ToolResult(images=...)`: the result refers to the stored image and the next call carries it in the
    ``tool_result``; bytes that are no image are left out with a note the model reads."""
    from stellate.engine.tools import ToolResult, tool
    from stellate.llm import tool_call

    @tool
    def snapshot() -> ToolResult:
        """Take a picture."""
        return ToolResult("two pictures", images=(RED, b"not an image"))

    server.push(MockReply(tool_calls=[tool_call("snapshot", {})]), MockReply(text="A red one."))
    async with anthropic(server) as llm, Agent("memory://", llm=llm, tools=[snapshot]) as agent:
        root = await agent.create_session(label="look")
        assert (await agent.turn(root.id, "snap")).content == "A red one."
        events = await (await agent.store()).read_events(SessionId(root.id), types=["tool/result"])
    assert [i["sha256"] for i in events[0].data["images"]] == [hashlib.sha256(RED).hexdigest()]
    result = server.requests[1].body["messages"][-1]["content"][0]
    assert result["content"][0]["text"].startswith("two pictures\n\n[Note from stellate: 1 of the tool's images")
    assert result["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(RED)},
    }


async def test_erasing_a_session_erases_its_images_but_a_kept_fork_keeps_them(tmp_path: Path) -> None:
    """An erased session's images go with it; a dependent kept with its own copy of the log keeps its image."""
    from stellate.llm.scripted import ScriptedLLM

    async with Agent(f"sqlite:///{tmp_path / 's.db'}", llm=ScriptedLLM(default="ok")) as agent:
        store = await agent.store()
        lone = await agent.create_session(label="lone")
        await agent.turn(lone.id, "x", images=[BLUE])
        root = await agent.create_session(label="root")
        await agent.turn(root.id, "y", images=[RED])
        child = await agent.fork_session(root.id, label="kid", context="inherit")
        await agent.erase_session(lone.id)
        await agent.erase_session(root.id, dependents="keep")
        hashes = [hashlib.sha256(data).hexdigest() for data in (RED, BLUE)]
        assert await store.has_blobs(hashes) == {hashes[0]}  # type: ignore[attr-defined]
        messages = await agent.list_messages(child.id)
        assert [i.sha256 for i in messages[0].images] == [hashes[0]]  # type: ignore[union-attr]
