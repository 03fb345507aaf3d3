"""Periodic pruning: the server erases archived sessions past an age, in every space it knows, now and then.

Each round claims ``prune:<space>`` in the store first, so of several workers on one database one prunes a
space and the others skip it. A session busy with a turn is left for the next round.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from stellate.errors import StellateError
from stellate.server.keys import KeyRing
from stellate.server.problems import ProblemError
from stellate.server.spaces import DEFAULT_SPACE, Spaces

__all__ = ["PrunePolicy", "prune_forever", "prune_spaces"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrunePolicy:
    """What the server prunes, and how often."""

    older_than: float
    """Seconds since an archived session's last activity after which it is erased."""
    every: float = 3600.0
    """Seconds between two rounds (the first runs at startup)."""


async def prune_spaces(spaces: Spaces, keys: KeyRing | None, policy: PrunePolicy) -> int:
    """One round over the default space and every space a key names; returns how many sessions were erased."""
    names = {DEFAULT_SPACE} | ({k.space for k in keys.keys()} if keys is not None else set())
    erased = 0
    for name in sorted(names):
        try:
            agent = spaces.agent(name)
        except ProblemError:
            continue  # a server without a space factory serves only the default space
        store = await agent.store()
        claim = await store.claim(f"prune:{name}", owner=agent.owner, ttl=max(policy.every, 60.0))
        if claim is None:
            continue  # another worker prunes this space now
        try:
            erased += len((await agent.prune_sessions(policy.older_than, busy_timeout=0, by="prune")).erased)
        except StellateError as exc:
            _log.warning("pruning space %s failed (%s): %s; the next round tries again", name, exc.code, exc)
        finally:
            await store.release_claim(claim)
    return erased


async def prune_forever(spaces: Spaces, keys: KeyRing | None, policy: PrunePolicy) -> None:
    """Prune every ``policy.every`` seconds until cancelled."""
    while True:
        await prune_spaces(spaces, keys, policy)
        await asyncio.sleep(policy.every)
