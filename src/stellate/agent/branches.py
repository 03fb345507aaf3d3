"""What `Agent` offers to branch a conversation again: edit, regenerate, compare and replay.

A base class of `Agent` with thin methods; the work is in `stellate.agent.branching`,
`stellate.agent.comparison` and `stellate.agent.replay`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, cast

from stellate.agent import branching, replay
from stellate.agent.branching import Branched
from stellate.agent.comparison import Comparison, compare_sessions
from stellate.agent.replay import Replay, ReplaySettings, ReplayTurn
from stellate.engine.events import TurnEvent

if TYPE_CHECKING:
    from stellate.agent.agent import Agent

__all__ = ["AgentBranches"]


class AgentBranches:
    """Edit, regenerate, compare and replay; mixed into `Agent`."""

    def _agent(self) -> Agent:
        return cast("Agent", self)

    async def edit_turn(self, session_id: str, turn: int, content: str, *, label: str | None = None) -> Branched:
        """Run ``turn`` again with a new user message, in a new branch cut just before it (by reference).

        The branch hangs beside the session (under its parent; a root's hang from the root); the session's
        turns stay as they were.

        Raises:
            UsageError: no such turn, or an empty message.
            ForkError, ArchivedError: as `Agent.fork_session`.
        """
        return await branching.edit(self._agent(), session_id, turn, content, label=label)

    def stream_edit_turn(
        self, session_id: str, turn: int, content: str, *, label: str | None = None
    ) -> AsyncIterator[TurnEvent]:
        """`edit_turn`, yielding the new turn's events as they happen (their ``session_id`` is the branch's)."""
        return branching.stream_edit(self._agent(), session_id, turn, content, label=label)

    async def regenerate_turn(self, session_id: str, turn: int | None = None, *, label: str | None = None) -> Branched:
        """Run ``turn`` (default: the last) again with its own user message, in a new branch (as `edit_turn`)."""
        agent = self._agent()
        turn = turn if turn is not None else await branching.last_turn(agent, session_id)
        return await branching.edit(agent, session_id, turn, None, label=label)

    async def stream_regenerate_turn(
        self, session_id: str, turn: int | None = None, *, label: str | None = None
    ) -> AsyncIterator[TurnEvent]:
        """`regenerate_turn`, yielding the new turn's events as they happen."""
        agent = self._agent()
        turn = turn if turn is not None else await branching.last_turn(agent, session_id)
        async for event in branching.stream_edit(agent, session_id, turn, None, label=label):
            yield event

    async def compare_sessions(self, a_id: str, b_id: str) -> Comparison:
        """Two sessions from their common ancestor: shared turns, then the turns after the split aligned.

        Raises:
            NotFoundError: either session is unknown.
        """
        return await compare_sessions(await self._agent().store(), a_id, b_id)

    async def replay_session(
        self,
        session_id: str,
        *,
        from_turn: int,
        llm: str | None = None,
        system_prompt: str | None = None,
        profile: str | None = None,
        label: str | None = None,
    ) -> Replay:
        """Run the session's user messages from ``from_turn`` on again, in a new branch with other settings.

        Args:
            session_id: The branch to replay (it is only read).
            from_turn: The first turn to run again; the new branch inherits the turns before it.
            llm: A registered adapter name for the new branch.
            system_prompt: The new branch's system prompt.
            profile: A fork profile for the new branch.
            label: The new branch's label.

        Raises:
            UsageError: no such turn; ``adapter_not_found`` for an unknown model name.
            ForkError: ``profile_not_found`` and the other fork errors.
            NotFoundError: unknown session.
        """
        settings = ReplaySettings(llm=llm, system_prompt=system_prompt, profile=profile, label=label)
        return await replay.replay(self._agent(), session_id, from_turn, settings)

    def stream_replay(
        self,
        session_id: str,
        *,
        from_turn: int,
        llm: str | None = None,
        system_prompt: str | None = None,
        profile: str | None = None,
        label: str | None = None,
    ) -> AsyncIterator[ReplayTurn | TurnEvent]:
        """`replay_session`, yielding a `ReplayTurn` before each turn, then that turn's events."""
        settings = ReplaySettings(llm=llm, system_prompt=system_prompt, profile=profile, label=label)
        return replay.stream_replay(self._agent(), session_id, from_turn, settings)
