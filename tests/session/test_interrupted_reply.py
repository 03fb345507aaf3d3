"""A reply whose stream broke is kept for the log and the UI, and reaches the model marked as cut off."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stellate.errors import ProviderError
from stellate.llm.scripted import ScriptedLLM, response_events
from stellate.llm.types import LLMRequest, StreamEvent, TextDelta
from stellate.log import AssistantMessage
from stellate.log.transcript import INTERRUPTED_REPLY_NOTE
from stellate.session import Session, SessionRuntime
from stellate.store.memory import MemoryStore


class BreakingLLM(ScriptedLLM):
    """Streams its first reply up to ``break_after`` events, then the connection drops."""

    def __init__(self, script: list[str], break_after: int) -> None:
        super().__init__(script)
        self.break_after = break_after

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = await self.complete(request)
        for index, event in enumerate(response_events(response)):
            if len(self.requests) == 1 and index == self.break_after:
                raise ProviderError("connection dropped mid-stream")
            yield event


async def test_a_partial_streamed_reply_is_marked_for_the_model_and_kept_in_the_log() -> None:
    store = MemoryStore()
    llm = BreakingLLM(["partial reply that never finished", "Sorry, here it is in full."], break_after=2)
    session = await Session.create(store, SessionRuntime(llm=llm))
    shown: list[str] = []
    with pytest.raises(ProviderError):
        async for event in session.stream("tell me"):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    assert "".join(shown) == "partial reply "
    stored = [e for e in await store.read_events(session.id) if e.type == "assistant/message"]
    assert stored[0].data["content"] == "partial reply " and stored[0].data["interrupted"] is True
    await session.send("go on")
    replayed = [m for m in llm.requests[1].messages if isinstance(m, AssistantMessage)]
    assert replayed == [AssistantMessage(content="partial reply " + INTERRUPTED_REPLY_NOTE)]
