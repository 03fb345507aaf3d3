"""Scheduled reflection: every N seconds, each space whose agent has a reflector reflects once.

Workers sharing a store would each tick; a claim in the store (``reflect:<space>``, held for most of an interval and
never released early) lets one of them reflect per interval and the others skip. A failed reflection is
published by the agent as an ``error`` event (source ``reflector``), so it shows on the Events page; the
schedule goes on.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio

from stellate.agent import Agent
from stellate.server.spaces import Spaces

__all__ = ["reflect_if_due", "reflection_schedule"]

_log = logging.getLogger("stellate.server")

_CLAIM_SHARE = 0.9  # of an interval: a worker ticking a little later still finds the claim held


@contextlib.asynccontextmanager
async def reflection_schedule(spaces: Spaces, every: float | None) -> AsyncIterator[None]:
    """Reflect every ``every`` seconds while the block runs (nothing when ``every`` is None)."""
    if every is None:
        yield
        return
    async with anyio.create_task_group() as group:
        group.start_soon(_tick, spaces, every)
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _tick(spaces: Spaces, every: float) -> None:
    while True:
        await anyio.sleep(every)
        for agent in spaces.agents():
            await reflect_if_due(agent, every)


async def reflect_if_due(agent: Agent, every: float) -> bool:
    """Reflect ``agent``'s space unless it has no reflector or another worker did so this interval; whether it ran."""
    if agent.reflector is None:
        return False
    store = await agent.store()
    if await store.claim(f"reflect:{store.space}", owner=agent.owner, ttl=every * _CLAIM_SHARE) is None:
        return False
    try:
        await agent.reflect()
    except Exception:  # published as an `error` event by the agent; the next interval tries again
        _log.warning("scheduled reflection failed", exc_info=True)
    return True
