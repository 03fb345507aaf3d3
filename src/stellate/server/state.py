"""What every route needs: the server's shared state, and the caller's space and agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from stellate.agent import Agent
from stellate.agent.images import SERVER_IMAGE_POLICY, ImagePolicy
from stellate.server.auth import Principal, authenticate
from stellate.server.keys import KeyRing
from stellate.server.pruning import PrunePolicy
from stellate.server.spaces import Spaces
from stellate.server.turns import TurnManager

__all__ = ["Caller", "CallerDep", "ServerState", "server_state"]


@dataclass(slots=True, kw_only=True)
class ServerState:
    """One per app."""

    spaces: Spaces
    turns: TurnManager
    keys: KeyRing | None
    store_name: str
    shutdown_grace: float
    prune: PrunePolicy | None = None
    """Periodic pruning of archived sessions (`stellate.server.pruning`), or None."""
    image_policy: ImagePolicy = SERVER_IMAGE_POLICY
    """What turns and uploads accept as images: bytes only, up to its ``max_bytes``."""

    reflect_every: float | None = None
    """Seconds between scheduled reflections (`stellate.server.reflection_schedule`); None: on request only."""


def server_state(request: Request) -> ServerState:
    """The app's state."""
    state: ServerState = request.app.state.stellate
    return state


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one request, with its space's agent."""

    principal: Principal
    agent: Agent
    server: ServerState

    @property
    def space(self) -> str:
        """The caller's space."""
        return self.principal.space


async def caller(request: Request) -> Caller:
    """Authenticate the request (see `stellate.server.auth`) and pick its space's agent.

    A coroutine, so FastAPI runs it on the event loop: a plain function would cost every request two thread
    hops (the work is a dict lookup, and with keys a hash and a ``stat`` of the key file).
    """
    server = server_state(request)
    principal = authenticate(request, server.keys)
    return Caller(principal, server.spaces.agent(principal.space), server)


CallerDep = Annotated[Caller, Depends(caller)]
