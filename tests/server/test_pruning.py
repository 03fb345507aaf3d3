"""The server's periodic pruning: archived sessions past the age go, in every space, once per round."""

from __future__ import annotations

import asyncio

import httpx
from server_support import Keys, echo, make_agent, running

from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.pruning import PrunePolicy, prune_spaces
from stellate.server.spaces import Spaces
from stellate.store import BaseStore


async def test_a_round_prunes_archived_sessions_in_every_space_of_the_keys(store: BaseStore, keys: Keys) -> None:
    """Archived sessions of the default space and of key spaces go; active ones and fresh archives stay."""
    llm = ScriptedLLM(default=echo)
    spaces = Spaces(make_agent(store, llm), lambda space: make_agent(store.in_space(space), llm))
    alpha = spaces.agent("alpha")
    old = await alpha.create_session(label="old")
    live = await alpha.create_session(label="live")
    await alpha.archive_session(old.id)
    default_old = await spaces.agent("default").create_session(label="default old")
    await spaces.agent("default").archive_session(default_old.id)
    await asyncio.sleep(0.05)
    assert await prune_spaces(spaces, keys.ring, PrunePolicy(older_than=3600)) == 0
    assert await prune_spaces(spaces, keys.ring, PrunePolicy(older_than=0.01)) == 2
    assert [d.id for d in await alpha.list_session_digests()] == [live.id]
    assert [t.erased_by for t in await alpha.list_tombstones()] == ["prune"]
    await spaces.close()


async def test_the_server_prunes_in_the_background(store: BaseStore) -> None:
    """An app with a prune policy erases an archived session without any request asking for it."""
    llm = ScriptedLLM(default=echo)
    agent = make_agent(store, llm)
    app = create_app(agent, prune=PrunePolicy(older_than=0, every=0.1))
    async with running(app) as (base, _), httpx.AsyncClient(base_url=base) as http:
        sid = (await http.post("/sessions", json={"label": "old"})).json()["id"]
        assert (await http.post(f"/sessions/{sid}/archive")).status_code == 200
        for _ in range(200):
            if (await http.get(f"/sessions/{sid}")).status_code == 404:
                break
            await asyncio.sleep(0.05)
        assert (await http.get(f"/sessions/{sid}")).status_code == 404
        assert [t["id"] for t in (await http.get("/tombstones")).json()] == [sid]
