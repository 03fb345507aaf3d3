"""Edits to a session's label and system prompt; like `Agent.put_memory`, they do not wait for a running turn."""

from __future__ import annotations

from stellate.agent.agent import Agent

__all__ = ["rename_session", "set_system_prompt"]


async def rename_session(agent: Agent, session_id: str, label: str) -> None:
    """Rename a session; the identity line of its next model call follows.

    Raises:
        NotFoundError: unknown session.
        ArchivedError: the session is archived.
    """
    await (await agent._session(session_id)).set_label(label)


async def set_system_prompt(agent: Agent, session_id: str, content: str) -> None:
    """Replace a session's system prompt from its next model call on.

    Raises:
        NotFoundError: unknown session.
        ArchivedError: the session is archived.
    """
    await (await agent._session(session_id)).set_system_prompt(content)
