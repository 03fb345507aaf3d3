"""Images alongside the features they meet: message search, the context-window view, paused turns (approval),
per-call usage and erase."""

from __future__ import annotations

import hashlib
from pathlib import Path

from stellate import Agent, Approval
from stellate.engine.tools import ToolResult, tool
from stellate.llm.image_tokens import image_tokens
from stellate.llm.scripted import Reply, ScriptedLLM, tool_call
from stellate.log.images import image_ref_of
from stellate.store import SessionId
from stellate.testing.images import png

PHOTO = png(900, 600, (10, 120, 200))


async def test_a_message_with_images_is_found_by_its_text(tmp_path: Path) -> None:
    """Search indexes the text of an image-bearing message as it does any other (SQLite's FTS index)."""
    async with Agent(f"sqlite:///{tmp_path / 's.db'}", llm=ScriptedLLM(default="a harbour")) as agent:
        root = await agent.create_session(label="look")
        await agent.turn(root.id, "what is in this photograph of Kyoto?", images=[PHOTO])
        hits = (await agent.search("photograph kyoto")).hits
    assert [(h.session_id, h.role, h.turn) for h in hits] == [(root.id, "user", 1)]


async def test_the_context_window_counts_the_images_of_the_history() -> None:
    """The history part of a past call grows by the image's tokens as `stellate.llm.image_tokens` counts them."""
    async with Agent("memory://", llm=ScriptedLLM(default="ok")) as agent:
        plain = await agent.create_session(label="t")
        await agent.turn(plain.id, "describe it")
        looked = await agent.create_session(label="t")
        await agent.turn(looked.id, "describe it", images=[PHOTO])
        without = {p.name: p.tokens for p in (await agent.context_window(plain.id)).parts}
        with_image = {p.name: p.tokens for p in (await agent.context_window(looked.id)).parts}
    assert with_image["history"] - without["history"] == image_tokens(image_ref_of(PHOTO)) > 0


async def test_an_approved_tool_returns_images_into_the_resumed_turn(tmp_path: Path) -> None:
    """A tool that needs approval runs once approved; its images are stored and reach the next model call, and
    the resumed call is recorded as a model/called event like any other."""

    @tool
    def camera() -> ToolResult:
        """Take a picture."""
        return ToolResult("one picture", images=(PHOTO,))

    llm = ScriptedLLM([Reply(tool_calls=[tool_call("camera", {}, id="c1")]), "A blue picture."])
    store = f"sqlite:///{tmp_path / 'a.db'}"
    async with Agent(store, llm=llm, tools=[camera], approvals={"camera": Approval()}) as agent:
        root = await agent.create_session(label="snap")
        paused = await agent.turn(root.id, "take one", images=[png(2, 2)])
        assert paused.reason == "awaiting_approval"
        result = await agent.approve(root.id, "c1")
        assert result is not None and result.content == "A blue picture."
        events = await (await agent.store()).read_events(SessionId(root.id))
        usage = await agent.usage_report(root.id)
    [tool_result] = [e for e in events if e.type == "tool/result"]
    assert [i["sha256"] for i in tool_result.data["images"]] == [hashlib.sha256(PHOTO).hexdigest()]
    assert llm.requests[-1].messages[-1].images[0].data == PHOTO  # type: ignore[union-attr]
    assert len(usage.calls) == 2 and [e.type for e in events].count("model/called") == 2


async def test_erasing_a_session_takes_its_images_and_its_search_rows(tmp_path: Path) -> None:
    """An erase deletes the session's rows (search index included) and then its now unreferenced images."""
    async with Agent(f"sqlite:///{tmp_path / 'e.db'}", llm=ScriptedLLM(default="ok")) as agent:
        store = await agent.store()
        gone = await agent.create_session(label="gone")
        await agent.turn(gone.id, "zanzibar sunset", images=[PHOTO])
        kept = await agent.create_session(label="kept")
        await agent.turn(kept.id, "zanzibar morning", images=[png(3, 3)])
        await agent.erase_session(gone.id)
        hits = (await agent.search("zanzibar")).hits
        left = await store.has_blobs([hashlib.sha256(d).hexdigest() for d in (PHOTO, png(3, 3))])  # type: ignore[attr-defined]
    assert [h.session_id for h in hits] == [kept.id]
    assert left == {hashlib.sha256(png(3, 3)).hexdigest()}
