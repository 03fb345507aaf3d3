"""Replay: a branch's user messages from a chosen turn, run again with another model, prompt or profile.

The new branch is cut just before that turn (by reference, see `stellate.agent.branching`), hangs beside
the source and takes the replay's settings as fork options; then each of the source's user messages from
that turn on runs there as a turn of its own, in order. The source is read, never changed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from stellate.agent.branching import branch_before, turn_messages
from stellate.agent.topology import SessionDigest
from stellate.engine.events import TurnEvent, TurnFinished, TurnResult
from stellate.errors import UsageError
from stellate.store import SessionId

if TYPE_CHECKING:
    from stellate.agent.agent import Agent

__all__ = ["Replay", "ReplaySettings", "ReplayTurn", "stream_replay"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplaySettings:
    """What a replay changes; every field None keeps the source's."""

    llm: str | None = None
    """A registered adapter name."""
    system_prompt: str | None = None
    profile: str | None = None
    label: str | None = None
    """The branch's label (default: the source's, with what changed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayTurn:
    """Progress of a replay: the next of the source's turns is about to run on the branch."""

    session_id: str
    """The branch."""
    source_id: str
    source_turn: int
    """The source's turn whose user message runs now."""
    index: int
    """1-based position among the turns replayed."""
    total: int
    content: str
    type: Literal["replay_turn"] = "replay_turn"


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A finished replay: the branch and the result of each turn it ran."""

    session: SessionDigest
    source_id: str
    from_turn: int
    results: list[TurnResult] = field(default_factory=list)


def replay_label(source_label: str, from_turn: int, settings: ReplaySettings) -> str:
    """The default label of a replay's branch: the source's, what changed and from which turn."""
    changed = [part for part in (settings.llm, settings.profile) if part]
    if settings.system_prompt is not None:
        changed.append("prompt")
    return f"{source_label} · replay {from_turn}" + (f" ({', '.join(changed)})" if changed else "")


async def start_replay(
    agent: Agent, session_id: str, from_turn: int, settings: ReplaySettings
) -> tuple[SessionDigest, list[ReplayTurn]]:
    """Make the replay's branch and plan its turns (nothing runs yet).

    Raises:
        UsageError: the source has no turn ``from_turn``.
        ForkError, ArchivedError, NotFoundError: as `Agent.fork_session` (an unknown profile or model too).
    """
    store = await agent.store()
    messages = await turn_messages(store, session_id, from_turn=from_turn)
    if not messages:
        raise UsageError(f"session {session_id} has no user message from turn {from_turn} on to replay")
    record = await store.get_session(SessionId(session_id))
    branch = await branch_before(
        agent,
        session_id,
        from_turn,
        label=settings.label or replay_label(record.label, from_turn, settings),
        llm=settings.llm,
        system_prompt=settings.system_prompt,
        profile=settings.profile,
    )
    steps = [
        ReplayTurn(
            session_id=branch.id,
            source_id=session_id,
            source_turn=message.turn,
            index=index,
            total=len(messages),
            content=message.content,
        )
        for index, message in enumerate(messages, 1)
    ]
    return branch, steps


async def stream_replay(
    agent: Agent, session_id: str, from_turn: int, settings: ReplaySettings
) -> AsyncIterator[ReplayTurn | TurnEvent]:
    """Replay, yielding a `ReplayTurn` before each turn and then that turn's events (as `Agent.stream`).

    Stopping early aborts the running turn (recorded as aborted); the turns done stay on the branch.
    """
    _, steps = await start_replay(agent, session_id, from_turn, settings)
    for step in steps:
        yield step
        async for event in agent.stream(step.session_id, step.content):
            yield event


async def replay(agent: Agent, session_id: str, from_turn: int, settings: ReplaySettings) -> Replay:
    """`stream_replay` to its end."""
    results: list[TurnResult] = []
    branch_id: str | None = None
    async for event in stream_replay(agent, session_id, from_turn, settings):
        if isinstance(event, ReplayTurn):
            branch_id = event.session_id
        elif isinstance(event, TurnFinished):
            results.append(event.result)
    assert branch_id is not None  # start_replay plans at least one turn or raises
    return Replay(
        session=await agent.get_session_digest(branch_id), source_id=session_id, from_turn=from_turn, results=results
    )
