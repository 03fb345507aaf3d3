"""The FastAPI application: routes under ``/v1``, problem responses, keys, spaces and server-owned turns."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import anyio
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from stellate import __version__
from stellate.agent import Agent
from stellate.agent.images import DEFAULT_MAX_IMAGE_BYTES, SERVER_IMAGE_POLICY
from stellate.server.approval_sweep import DEFAULT_SWEEP_SECONDS, sweep_approvals
from stellate.server.keys import KeyRing
from stellate.server.limits import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY, BodyLimit, upload_body_limit
from stellate.server.problems import install_problem_handlers
from stellate.server.pruning import PrunePolicy, prune_forever
from stellate.server.reflection_schedule import reflection_schedule
from stellate.server.routes import (
    approvals,
    blobs,
    branches,
    erasure,
    events,
    forks,
    log,
    meta,
    search,
    sessions,
    turns,
    usage,
)
from stellate.server.security import BrowserGuard, HostPolicy
from stellate.server.spaces import AgentFactory, Spaces
from stellate.server.state import ServerState
from stellate.server.stream_caps import (
    DEFAULT_STREAMS_PER_CLIENT,
    DEFAULT_STREAMS_PER_SPACE,
    StreamCaps,
    document_stream_caps,
)
from stellate.server.turns import TurnManager
from stellate.server.ui import install_ui

__all__ = ["DEFAULT_SHUTDOWN_GRACE", "create_app"]

DEFAULT_SHUTDOWN_GRACE = 10.0
"""Seconds running turns get to finish at shutdown before they are aborted (each records ``aborted``)."""

_DESCRIPTION = """Branching LLM conversations over HTTP: a forest of sessions per space.

Authenticate with `Authorization: Bearer <key>` when the server has keys. Every error is an RFC 9457
problem (`application/problem+json`) whose `code` is the stellate error code.
"""


def create_app(
    agent: Agent,
    *,
    spaces: AgentFactory | None = None,
    keys: KeyRing | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    max_streams_per_client: int = DEFAULT_STREAMS_PER_CLIENT,
    max_streams_per_space: int = DEFAULT_STREAMS_PER_SPACE,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
    store_name: str = "",
    prune: PrunePolicy | None = None,
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
    reflect_every: float | None = None,
    approval_sweep: float = DEFAULT_SWEEP_SECONDS,
) -> FastAPI:
    """The API over ``agent``.

    Args:
        agent: Serves the default space (the only one without keys).
        spaces: Builds the agent of another space from its name (usually over ``store.in_space(name)``);
            needed when keys name spaces other than ``default``.
        keys: The API keys; without them every request is the default space's (loopback dev mode).
        max_body: Largest request body in bytes (413 past it).
        body_timeout: Seconds a client has to send a request's body (408 past it).
        allowed_hosts: ``Host`` names served besides loopback ones (``example.com``, ``*.example.com``, ``*``);
            others get 421. Default: loopback only without keys, any host with keys.
        allowed_origins: Origins besides the server's own whose pages may change state (others get 403).
        max_streams_per_client: Event streams one client address may hold open (429 past it).
        max_streams_per_space: Event streams one space may hold open (429 past it).
        shutdown_grace: Seconds running turns get to finish at shutdown before they are aborted.
        store_name: What ``/v1/info`` says about the store (never a password).
        prune: Erase archived sessions past an age, now and then, in every space (see docs/store.md).
        max_image_bytes: Largest image a turn or ``POST /v1/blobs`` takes (413 ``image_too_large`` past it).
        reflect_every: Seconds between scheduled reflections of each space whose agent has a reflector (once
            per interval across the workers sharing the store); None reflects only on request.
        approval_sweep: Seconds between two looks at passed approval deadlines (see `stellate.server.approval_sweep`).
    """
    state = ServerState(
        spaces=Spaces(agent, spaces),
        turns=TurnManager(),
        keys=keys,
        store_name=store_name,
        shutdown_grace=shutdown_grace,
        prune=prune,
        image_policy=replace(SERVER_IMAGE_POLICY, max_bytes=max_image_bytes),
        reflect_every=reflect_every,
    )
    # The API docs page serves Swagger UI from the package, not from a CDN: it works offline.
    app = FastAPIOffline(
        title="stellate",
        version=__version__,
        description=_DESCRIPTION,
        lifespan=_lifespan,
        static_url="/docs-assets",
        redoc_url=None,
    )
    app.state.stellate = state
    app.state.approval_sweep = approval_sweep
    install_problem_handlers(app)
    for module in (sessions, turns, forks, log, meta, events, branches, erasure, approvals, search, usage, blobs):
        app.include_router(module.router, prefix="/v1")
    install_ui(app)
    document_stream_caps(app)
    # Outermost last: a refused Host or Origin runs nothing, not even the body read.
    app.add_middleware(
        BodyLimit, max_bytes=max_body, timeout=body_timeout, upload_bytes=upload_body_limit(max_image_bytes)
    )
    app.add_middleware(
        StreamCaps, api=app, keys=keys, per_client=max_streams_per_client, per_space=max_streams_per_space
    )
    policy = HostPolicy.of(allowed_hosts, allowed_origins, with_keys=keys is not None)
    app.add_middleware(BrowserGuard, policy=policy)
    return app


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Prune, reflect and sweep approval deadlines while serving; at shutdown, turns get their grace."""
    state: ServerState = app.state.stellate
    sweep = asyncio.get_running_loop().create_task(sweep_approvals(state.spaces, app.state.approval_sweep))
    try:
        async with reflection_schedule(state.spaces, state.reflect_every), anyio.create_task_group() as background:
            if state.prune is not None:
                background.start_soon(prune_forever, state.spaces, state.keys, state.prune)
            yield
            background.cancel_scope.cancel()
    finally:
        sweep.cancel()
        await asyncio.gather(sweep, return_exceptions=True)
    await state.turns.shutdown(state.shutdown_grace)
    await state.spaces.close()
