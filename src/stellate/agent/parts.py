"""What the parts of `Agent` (its base classes: reading, branches, erasure, approvals...) may rely on.

Each part is a base class of `Agent` with one concern; `AgentParts` declares, once, the attributes and the
methods `Agent` provides them, so every part type-checks on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stellate.agent._locks import SessionLocks
    from stellate.agent.bus import EventBus
    from stellate.agent.consolidation import Consolidator
    from stellate.agent.images import ImagePolicy
    from stellate.agent.prices import Price
    from stellate.agent.sessions import SessionCache
    from stellate.engine.approval import ApprovalPolicy
    from stellate.engine.tools import ToolRegistry
    from stellate.session.session import Session
    from stellate.store import BaseStore

__all__ = ["AgentParts"]


class AgentParts:
    """The agent's state and services its parts use; `Agent` sets and implements every one."""

    events: EventBus
    busy_timeout: float
    max_rounds: int
    approvals: ApprovalPolicy
    image_policy: ImagePolicy
    prices: dict[str, Price]
    """The price table (model or ``provider/model`` -> `Price`); empty: no cost is known."""
    _locks: SessionLocks
    _sessions: SessionCache
    _consolidator: Consolidator

    async def store(self) -> BaseStore:
        """The agent's store, opened on first use."""
        raise NotImplementedError

    async def events_recorded(self) -> None:
        """Return once the events published so far are in the event history."""
        raise NotImplementedError

    async def _session(self, session_id: str, *, fresh: bool = True) -> Session:
        raise NotImplementedError

    async def _tools_for(self, session: Session) -> ToolRegistry:
        raise NotImplementedError
