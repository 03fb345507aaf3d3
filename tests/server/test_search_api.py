"""``GET /v1/search`` on both SQL backends: hits with their place, pages, archived sessions, spaces and keys."""

from __future__ import annotations

import httpx
from server_support import Keys, bearer


async def _session(client: httpx.AsyncClient, label: str, *messages: str, headers: dict[str, str] | None = None) -> str:
    sid: str = (await client.post("/sessions", json={"label": label}, headers=headers)).json()["id"]
    for content in messages:
        response = await client.post(f"/sessions/{sid}/turns", json={"content": content}, headers=headers)
        assert response.status_code == 200, response.text
    return sid


async def test_search_returns_each_hit_with_its_session_seq_turn_and_role(client: httpx.AsyncClient) -> None:
    sid = await _session(client, "Study abroad", "hello", "我想去日本留学")
    response = await client.get("/search", params={"q": "日本"})
    assert response.status_code == 200
    hits = response.json()["hits"]
    assert {(h["role"], h["turn"]) for h in hits} == {("user", 2), ("assistant", 2)}  # the echo repeats it
    user = next(h for h in hits if h["role"] == "user")
    assert user["session_id"] == sid and user["label"] == "Study abroad" and user["archived"] is False
    assert user["snippet"] == "我想去日本留学" and user["highlights"] == [[3, 5]]
    events = (await client.get(f"/sessions/{sid}/events", params={"after": user["seq"] - 1, "limit": 1})).json()
    assert events["events"][0]["type"] == "user/message" and events["events"][0]["seq"] == user["seq"]


async def test_a_fork_does_not_repeat_the_hits_it_inherits(client: httpx.AsyncClient) -> None:
    sid = await _session(client, "Root", "paper lanterns")
    fork = await client.post(f"/sessions/{sid}/forks", json={"label": "Fork", "context": "inherit"})
    assert fork.status_code == 201, fork.text
    hits = (await client.get("/search", params={"q": "lanterns"})).json()["hits"]
    assert {h["session_id"] for h in hits} == {sid} and len(hits) == 2


async def test_pages_and_archived_sessions(client: httpx.AsyncClient) -> None:
    for n in range(3):
        await _session(client, f"s{n}", f"ferry {n}")
    first = (await client.get("/search", params={"q": "ferry", "limit": 4})).json()
    assert len(first["hits"]) == 4 and first["next_offset"] == 4
    rest = (await client.get("/search", params={"q": "ferry", "limit": 4, "offset": 4})).json()
    assert len(rest["hits"]) == 2 and rest["next_offset"] is None
    old = await _session(client, "old", "glacier")
    assert (await client.post(f"/sessions/{old}/archive")).status_code in (200, 204)
    assert (await client.get("/search", params={"q": "glacier"})).json()["hits"] == []
    both = (await client.get("/search", params={"q": "glacier", "archived": "true"})).json()["hits"]
    assert {h["archived"] for h in both} == {True}


async def test_an_unusable_query_is_a_problem(client: httpx.AsyncClient) -> None:
    for params in ({"q": "   "}, {"q": "x", "limit": 0}, {}, {"q": "a b c d e f g h i"}):
        response = await client.get("/search", params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["code"] in ("usage_error", "validation_error")


async def test_a_key_finds_only_its_own_spaces_messages(keyed: httpx.AsyncClient, keys: Keys) -> None:
    alpha, beta = bearer(keys.alpha), bearer(keys.beta)
    await _session(keyed, "secret", "the vault code", headers=alpha)
    assert (await keyed.get("/search", params={"q": "vault"})).status_code == 401
    assert (await keyed.get("/search", params={"q": "vault"}, headers=beta)).json()["hits"] == []
    mine = (await keyed.get("/search", params={"q": "vault"}, headers=bearer(keys.alpha_read_only))).json()["hits"]
    assert len(mine) == 2  # a read-only key of the space searches it too
