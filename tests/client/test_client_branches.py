"""`Client` and `SyncClient` edit, regenerate, compare and replay like `Agent`, over real HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from client_support import running_in_thread

from stellate import Agent
from stellate.agent.replay import ReplayTurn
from stellate.client import Client, SyncClient
from stellate.engine.events import TurnFinished
from stellate.errors import UsageError
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.store.memory import MemoryStore


def echo_llm(name: str = "echo") -> ScriptedLLM:
    return ScriptedLLM(default=lambda request: f"{name}: {request.messages[-1].content}", model=name)


@pytest.fixture
def server_url() -> Iterator[str]:
    """A real server in a thread of its own, with a second model named ``other``."""
    app = create_app(Agent(MemoryStore(), llm=echo_llm(), adapters={"other": echo_llm("other")}))
    with running_in_thread(app) as url:
        yield url


async def test_the_remote_agent_branches_like_the_local_one(server_url: str) -> None:
    """The same calls give the same shapes in process and over HTTP."""
    local = Agent(MemoryStore(), llm=echo_llm(), adapters={"other": echo_llm("other")})
    async with Client(server_url) as remote:
        for agent in (local, remote):
            root = await agent.create_session(label="Trip")
            await agent.turn(root.id, "one")
            await agent.turn(root.id, "two")
            edited = await agent.edit_turn(root.id, 2, "deux")
            regenerated = await agent.regenerate_turn(root.id, 1, label="Again")
            assert edited.result.content == "echo: deux" and edited.session.parent_id == root.id
            assert regenerated.session.label == "Again" and regenerated.result.turn == 1
            comparison = await agent.compare_sessions(root.id, edited.session.id)
            assert comparison.ancestor_id == root.id and [r.turn for r in comparison.rows] == [2]
            replayed = await agent.replay_session(root.id, from_turn=1, llm="other")
            assert [r.content for r in replayed.results] == ["other: one", "other: two"]


async def test_the_streams_yield_typed_events(server_url: str) -> None:
    """Edit and replay streams carry the branch's turn events and the replay's progress."""
    async with Client(server_url) as remote:
        root = await remote.create_session(label="S")
        await remote.turn(root.id, "one")
        events = [e async for e in remote.stream_edit_turn(root.id, 1, "uno")]
        assert isinstance(events[-1], TurnFinished) and events[-1].result.content == "echo: uno"
        again = [e async for e in remote.stream_regenerate_turn(root.id)]
        assert isinstance(again[-1], TurnFinished) and again[-1].result.content == "echo: one"
        replay = [e async for e in remote.stream_replay(root.id, from_turn=1, llm="other")]
        assert isinstance(replay[0], ReplayTurn) and replay[0].total == 1
        assert isinstance(replay[-1], TurnFinished) and replay[-1].result.content == "other: one"
        with pytest.raises(UsageError):
            [e async for e in remote.stream_edit_turn(root.id, 9, "x")]


def test_the_sync_client_delegates(server_url: str) -> None:
    """`SyncClient` has the same four methods."""
    with SyncClient(server_url) as remote:
        root = remote.create_session(label="S")
        remote.turn(root.id, "one")
        edited = remote.edit_turn(root.id, 1, "uno")
        regenerated = remote.regenerate_turn(root.id)
        comparison = remote.compare_sessions(edited.session.id, regenerated.session.id)
        assert comparison.ancestor_id == root.id and comparison.rows[0].replies_differ
        assert remote.replay_session(root.id, from_turn=1, label="R").session.label == "R"
