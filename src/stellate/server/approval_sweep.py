"""The server's periodic look at approval deadlines: a paused turn nobody visits still times out.

Deadlines are also decided lazily, whenever a session's approvals or a new turn are asked for; this sweep
covers the rest. Every worker sweeps: two deciding the same deadline meet like two approvers (one wins).
"""

from __future__ import annotations

import asyncio
import logging

from stellate.errors import StellateError
from stellate.server.spaces import Spaces

__all__ = ["DEFAULT_SWEEP_SECONDS", "sweep_approvals"]

DEFAULT_SWEEP_SECONDS = 30.0
"""Seconds between two sweeps of the approval deadlines of every space this server has served."""

log = logging.getLogger("stellate.server")


async def sweep_approvals(spaces: Spaces, every: float) -> None:
    """Decide passed approval deadlines of every open space, every ``every`` seconds, until cancelled."""
    while True:
        await asyncio.sleep(every)
        for agent in spaces.agents():
            try:
                await agent.expire_approvals()
            except StellateError as exc:  # a store blink or a busy session: the next sweep tries again
                log.warning("approval sweep failed: %s [%s]", exc.message, exc.code)
