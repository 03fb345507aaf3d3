"""`stellate.client`: Agent's method names over HTTP, with the same error classes and codes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from client_support import running_in_thread

from stellate import Agent, ForkOptions, SessionConfig
from stellate.client import Client, SyncClient
from stellate.engine.events import TextChunk, TurnFinished
from stellate.errors import ForkError, NotFoundError, UsageError
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.store.memory import MemoryStore


def echo_llm() -> ScriptedLLM:
    return ScriptedLLM(default=lambda request: f"echo: {request.messages[-1].content}")


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    app = create_app(Agent(MemoryStore(), llm=echo_llm()))
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as remote:
        yield remote


async def test_the_remote_agent_answers_like_the_local_one(client: Client) -> None:
    local = Agent(MemoryStore(), llm=echo_llm())
    for agent in (local, client):
        root = await agent.create_session(label="Trip")
        result = await agent.turn(root.id, "hello")
        child = await agent.fork_session(root.id, ForkOptions(label="Budget", context="inherit"))
        await agent.put_insight(child.id, "cheaper in NL")
        await agent.put_memory(root.id, "a year abroad")
        assert result.content == "echo: hello" and result.turn == 1
        assert [m.content for m in await agent.list_messages(child.id)] == ["hello", "echo: hello"]
        digests = {d.label: d for d in await agent.list_session_digests()}
        assert digests["Budget"].insight == "cheaper in NL" and digests["Trip"].memory == "a year abroad"
        [tree] = await agent.get_topology()
        assert tree.children[0].id == child.id and tree.children[0].source_id == root.id
        assert (await agent.get_session_digest(child.id)).parent_id == root.id


async def test_stream_yields_typed_events(client: Client) -> None:
    root = await client.create_session(label="s")
    events = [event async for event in client.stream(root.id, "hi")]
    assert any(isinstance(e, TextChunk) for e in events)
    assert isinstance(events[-1], TurnFinished) and events[-1].result.content == "echo: hi"


async def test_errors_keep_their_class_and_code(client: Client) -> None:
    with pytest.raises(NotFoundError) as missing:
        await client.turn("nope", "hi")
    assert missing.value.code == "session_not_found"
    root = await client.create_session(label="s")
    await client.turn(root.id, "hi")
    with pytest.raises(ForkError) as refused:
        await client.fork_session(root.id, label="x", boundary=2)
    assert refused.value.code == "open_turn" and refused.value.details["boundary"] == 2


@pytest.fixture
def server_url() -> Iterator[str]:
    """A real server in a thread of its own (the sync client blocks the calling thread)."""
    app = create_app(Agent(MemoryStore(), llm=echo_llm()))
    with running_in_thread(app) as url:
        yield url


def test_the_sync_client_blocks_and_streams(server_url: str) -> None:
    with SyncClient(server_url) as remote:
        root = remote.create_session(label="sync")
        assert remote.turn(root.id, "one").content == "echo: one"
        events = list(remote.stream(root.id, "two"))
        assert isinstance(events[-1], TurnFinished) and events[-1].result.turn == 2
        assert [d.id for d in remote.list_session_digests()] == [root.id]
        with pytest.raises(NotFoundError):
            remote.get_session_digest("nope")


async def test_a_config_crosses_by_name_only(client: Client) -> None:
    made = await client.create_session(label="named", config=SessionConfig(skills=[]))
    await client.set_system_prompt(made.id, "Be brief.")
    with pytest.raises(UsageError):
        await client.create_session(label="objects", config=SessionConfig(llm=echo_llm()))
    with pytest.raises(UsageError) as unknown:
        await client.create_session(label="unknown", config=SessionConfig(tools=["nope"]))
    assert unknown.value.code == "tool_not_found"
    assert [d.label for d in await client.list_session_digests()] == ["named"]


async def test_the_forest_and_the_session_count_inherited_turns_apart() -> None:
    """A fork's turns split into its own and those read from its source, in the forest, over HTTP and in-process."""
    local = Agent(MemoryStore(), llm=echo_llm())
    app = create_app(local)
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as remote:
        for agent in (local, remote):
            root = await agent.create_session(label="Trip")
            await agent.turn(root.id, "one")
            await agent.turn(root.id, "two")
            child = await agent.fork_session(root.id, ForkOptions(label="Budget", context="inherit"))
            await agent.turn(child.id, "three")
            [node] = [n for n in await agent.get_topology() if n.id == root.id]
            assert (node.turn_count, node.inherited_turns) == (2, 0)
            assert (node.children[0].turn_count, node.children[0].inherited_turns) == (3, 2)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as http:
            detail = (await http.get(f"/sessions/{child.id}")).json()
    assert (detail["turn_count"], detail["inherited_turns"]) == (3, 2)


def test_the_sync_client_reads_the_capabilities(server_url: str) -> None:
    with SyncClient(server_url) as remote:
        found = remote.capabilities()
    assert found["default_model"] == {"provider": "scripted", "model": "scripted-model", "base_url": None}
    assert (found["reflector"], found["reflection"]) == (False, None)


async def test_search_over_http_returns_the_same_hits_as_in_process(client: Client) -> None:
    local = Agent(MemoryStore(), llm=echo_llm())
    for agent in (local, client):
        root = await agent.create_session(label="Trip")
        await agent.turn(root.id, "ferry times to Naoshima")
        page = await agent.search("naoshima", limit=1)
        assert [(h.session_id, h.seq, h.turn, h.label) for h in page.hits] == [(root.id, 4, 1, "Trip")]
        assert page.next_offset == 1  # the echo holds it too
        rest = await agent.search("naoshima", limit=1, offset=1)
        assert [h.role for h in rest.hits] == ["user"] and rest.next_offset is None
    with pytest.raises(UsageError):
        await client.search(" ")


def test_the_sync_client_searches(server_url: str) -> None:
    with SyncClient(server_url) as remote:
        root = remote.create_session(label="sync")
        remote.turn(root.id, "蓝色的海")
        assert {h.role for h in remote.search("蓝色").hits} == {"user", "assistant"}


async def test_the_client_pages_the_listing_and_the_forest_as_the_agent_does() -> None:
    """Keyset pages over HTTP equal the agent's own, and the forest built from pages equals `Agent.get_topology`."""
    local = Agent(MemoryStore(), llm=echo_llm())
    roots = [await local.create_session(label=f"r{n}") for n in range(3)]
    for n in range(7):
        await local.fork_session(roots[n % 3].id, ForkOptions(label=f"k{n}"))
    await local.archive_session(roots[1].id)
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(create_app(local))) as remote:
        for agent in (local, remote):
            first = await agent.list_session_digests_page(limit=4)
            rest = await agent.list_session_digests_page(after=first[-1].id, limit=100)
            assert first + rest == await local.list_session_digests()
            kids = await agent.list_session_digests_page(parent_id=roots[0].id, limit=2)
            assert [d.label for d in kids] == ["k0", "k3"]
            archived = await agent.list_session_digests_page(status="archived")
            assert [d.id for d in archived] == [roots[1].id]
            nodes = await agent.get_topology_page(after=roots[2].id, limit=3)
            assert [n.label for n in nodes] == ["k0", "k1", "k2"]
        assert await remote.get_topology() == await local.get_topology()
