"""Helpers of the fault-injection suite: a store that fails its N-th write, a model whose stream breaks at event
K, and the checks every fault must pass."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from stellate.engine.events import TurnFinished
from stellate.engine.runner import TurnRunner
from stellate.engine.tools import ToolRegistry, tool
from stellate.errors import ProviderError, StellateError
from stellate.llm.scripted import Reply, ScriptedLLM, ScriptStep, response_events
from stellate.llm.types import LLMRequest, StreamEvent
from stellate.log import Event, check_log, check_messages_pairing, derive_transcript, message_to_json
from stellate.session import Session
from stellate.store import BaseStore

#: Store methods that write; every other attribute of a `FaultyStore` is the wrapped store's own. Lease renewal
#: is left out: a timer drives it, so counting it would make the N-th write depend on timing.
WRITES = frozenset({"append", "append_batches", "create_session", "repair", "acquire_lease", "release_lease"})
READS = frozenset({"get_session", "read_events"})


class FaultyStore:
    """Wraps a store; its write number ``fail_at`` (from 1) raises ``error()`` instead of (or after) writing.

    Args:
        inner: The store that does the work.
        error: Builds the exception to raise.
        after_commit: Write first, then raise: the commit landed but its answer was lost.
        writes: The methods counted (and failed) as writes.
        reads_down: How many reads fail after the injected failure (the store is down, not just one write).
    """

    def __init__(
        self,
        inner: BaseStore,
        error: Callable[[], Exception],
        *,
        after_commit: bool = False,
        writes: frozenset[str] = WRITES,
        reads_down: int = 0,
    ) -> None:
        self.inner = inner
        self.error = error
        self.after_commit = after_commit
        self.counted = writes
        self.reads_down = reads_down
        self.fail_at: int | None = None
        self.writes = 0
        self.committed: list[Event] = []
        """Events of every append that reported success (or landed before its injected failure)."""

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name in READS:
            return self._read(attribute)
        if name not in self.counted:
            return attribute

        async def write(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            if self.writes != self.fail_at:
                return self._remember(name, await attribute(*args, **kwargs))
            if self.after_commit:
                self._remember(name, await attribute(*args, **kwargs))
            raise self.error()

        return write

    def _read(self, attribute: Any) -> Any:
        async def read(*args: Any, **kwargs: Any) -> Any:
            if self.reads_down and self.fail_at is not None and self.writes >= self.fail_at:
                self.reads_down -= 1
                raise self.error()
            return await attribute(*args, **kwargs)

        return read

    def _remember(self, name: str, result: Any) -> Any:
        if name in ("append", "repair"):
            self.committed.extend(result)
        return result


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: Which city.
    """
    return f"{city}: mild, 14 degrees"


TOOLS = ToolRegistry([lookup])


async def run_turn(session: Session, content: str) -> TurnFinished | StellateError:
    """Run one tool-calling turn; its typed error, if it fails, is returned for the test to inspect."""
    try:
        events = [e async for e in TurnRunner(session, TOOLS).run(content)]
    except StellateError as exc:
        return exc
    finished = events[-1]
    assert isinstance(finished, TurnFinished)
    return finished


async def check_consistent(session: Session, store: BaseStore) -> list[Event]:
    """The session's memory equals its store, the log is valid and its transcript pairs every call."""
    record = await store.get_session(session.id)
    assert session.history.cursor == record.cursor, "the session in memory differs from its store"
    events = await store.read_events(session.id)
    check_log(events)
    check_messages_pairing([message_to_json(m) for m in derive_transcript(events).messages])
    return events


class BreakingLLM(ScriptedLLM):
    """A scripted model whose stream raises `ProviderError` before event ``break_at`` of call ``on_call``.

    ``break_at`` equal to the number of events breaks the stream after its final `ResponseDone`.
    """

    def __init__(self, script: list[ScriptStep], *, on_call: int, break_at: int) -> None:
        super().__init__(script)
        self.on_call, self.break_at = on_call, break_at

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        response = await self.complete(request)
        events = response_events(response)
        for index, event in enumerate(events):
            if len(self.requests) == self.on_call and index == self.break_at:
                raise ProviderError("injected: the connection dropped mid-stream")
            yield event
        if len(self.requests) == self.on_call and self.break_at == len(events):
            raise ProviderError("injected: the connection dropped after the final event")


async def streamed(step: Reply) -> list[StreamEvent]:
    """The events a scripted reply streams."""
    return [e async for e in ScriptedLLM([step]).stream(LLMRequest(messages=[]))]
