"""Sessions over HTTP: create, list with filters and cursors, the forest, one session, slots."""

from __future__ import annotations

import httpx

from stellate.store import BaseStore


async def create(client: httpx.AsyncClient, label: str, **body: object) -> str:
    response = await client.post("/sessions", json={"label": label, **body})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_created_root_is_listed_and_shown(client: httpx.AsyncClient) -> None:
    sid = await create(client, "Trip", system_prompt="Be brief.")
    page = (await client.get("/sessions")).json()
    assert [d["id"] for d in page["items"]] == [sid] and page["next_cursor"] is None
    detail = (await client.get(f"/sessions/{sid}")).json()
    assert detail["label"] == "Trip" and detail["system_prompt"] == "Be brief."
    assert detail["turn_count"] == 0 and detail["open_turn"] is False and detail["running"] is False
    assert detail["config"]["system_prompt"] == "Be brief."


async def test_listing_pages_with_a_cursor_that_survives_filters(client: httpx.AsyncClient) -> None:
    ids = [await create(client, f"s{n}") for n in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/sessions", params=params)).json()
        seen += [d["id"] for d in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
    bad = await client.get("/sessions", params={"cursor": "bm9wZQ"})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


async def test_listing_filters_by_root_parent_status_and_label(client: httpx.AsyncClient) -> None:
    root = await create(client, "Alpha root")
    other = await create(client, "Beta root")
    child = (await client.post(f"/sessions/{root}/forks", json={"label": "Alpha child"})).json()["id"]
    await client.post(f"/sessions/{other}/archive")

    async def ids(**params: object) -> list[str]:
        return [d["id"] for d in (await client.get("/sessions", params=params)).json()["items"]]

    assert await ids(root=root) == [root, child]
    assert await ids(parent=root) == [child]
    assert await ids(status="archived") == [other]
    assert await ids(q="ALPHA") == [root, child]
    assert (await client.get("/sessions", params={"root": "nope"})).status_code == 404


async def test_forest_has_topology_parent_and_source(client: httpx.AsyncClient) -> None:
    root = await create(client, "root")
    a = (await client.post(f"/sessions/{root}/forks", json={"label": "a"})).json()["id"]
    b = (
        await client.post(f"/sessions/{root}/forks", json={"label": "b", "topology_parent_id": a, "context": "inherit"})
    ).json()["id"]
    [tree] = (await client.get("/forest")).json()
    assert tree["id"] == root
    [node_a] = tree["children"]
    [node_b] = node_a["children"]
    assert node_b["id"] == b and node_b["parent_id"] == a and node_b["source_id"] == root


async def _pages(client: httpx.AsyncClient, path: str, limit: int, **params: object) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    cursor = None
    while True:
        query = {"limit": limit, **params, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(path, params=query)).json()
        assert len(page["items"]) <= limit
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


async def test_the_forest_pages_list_every_node_once_parents_first(client: httpx.AsyncClient) -> None:
    """``/forest/nodes`` pages hold the nodes of ``/forest`` in creation order; an erased cursor is refused."""
    root = await create(client, "root")
    kids = [(await client.post(f"/sessions/{root}/forks", json={"label": f"k{n}"})).json()["id"] for n in range(4)]
    other = await create(client, "other")
    flat = await _pages(client, "/forest/nodes", 2)
    assert [n["id"] for n in flat] == [root, *kids, other]
    assert [n["parent_id"] for n in flat] == [None, root, root, root, root, None]
    assert all(n["children"] == [] for n in flat)
    forest = (await client.get("/forest")).json()
    assert [n["id"] for n in forest] == [root, other] and [c["id"] for c in forest[0]["children"]] == kids
    page = (await client.get("/forest/nodes", params={"limit": 3})).json()
    assert (await client.delete(f"/sessions/{kids[1]}")).status_code == 200  # the page's last node is erased
    gone = await client.get("/forest/nodes", params={"cursor": page["next_cursor"]})
    assert gone.status_code == 422 and gone.json()["code"] == "validation_error"


async def test_a_label_filter_pages_past_what_it_skips(client: httpx.AsyncClient) -> None:
    """``q`` keeps the matching digests page by page, however many others lie between them."""
    ids = [await create(client, "match" if n % 7 == 0 else "other") for n in range(30)]
    assert [d["id"] for d in await _pages(client, "/sessions", 2, q="MATCH")] == ids[::7]
    assert [d["id"] for d in await _pages(client, "/sessions", 4, status="active")] == ids


async def test_rename_insight_memory_and_archive(client: httpx.AsyncClient) -> None:
    sid = await create(client, "old")
    assert (await client.patch(f"/sessions/{sid}", json={"label": "new"})).json()["label"] == "new"
    assert (await client.put(f"/sessions/{sid}/insight", json={"content": "look"})).json()["insight"] == "look"
    assert (await client.delete(f"/sessions/{sid}/insight")).json()["insight"] is None
    assert (await client.put(f"/sessions/{sid}/memory", json={"content": "m"})).json()["memory"] == "m"
    assert (await client.post(f"/sessions/{sid}/archive")).json()["status"] == "archived"
    refused = await client.put(f"/sessions/{sid}/memory", json={"content": "x"})
    assert refused.status_code == 409 and refused.json()["code"] == "session_archived"


async def test_consolidate_writes_the_memory(client: httpx.AsyncClient) -> None:
    sid = await create(client, "c")
    await client.post(f"/sessions/{sid}/turns", json={"content": "remember 42"})
    out = (await client.post(f"/sessions/{sid}/consolidate")).json()
    assert out["memory"] and (await client.get(f"/sessions/{sid}")).json()["memory"] == out["memory"]


async def test_taken_id_is_a_conflict(client: httpx.AsyncClient) -> None:
    await create(client, "x", session_id="fixed-id")
    again = await client.post("/sessions", json={"session_id": "fixed-id"})
    assert again.status_code == 409 and again.json()["code"] == "session_exists"


async def test_lineage_lists_ancestors_with_their_fork_seqs_and_descendants(client: httpx.AsyncClient) -> None:
    root = await create(client, "root")
    await client.post(f"/sessions/{root}/turns", json={"content": "hi"})
    child = (await client.post(f"/sessions/{root}/forks", json={"label": "child", "boundary": 7})).json()["id"]
    grandchild = (await client.post(f"/sessions/{child}/forks", json={"label": "grandchild"})).json()["id"]
    lineage = (await client.get(f"/sessions/{child}/lineage")).json()
    assert lineage["session"]["fork_seq"] == 7 and lineage["session"]["source_id"] == root
    assert [a["id"] for a in lineage["ancestors"]] == [root]
    assert [d["id"] for d in lineage["descendants"]["children"]] == [grandchild]
    assert (await client.get("/sessions/nope/lineage")).status_code == 404


async def test_a_root_can_name_its_model_tools_and_skills(client: httpx.AsyncClient) -> None:
    made = await client.post("/sessions", json={"label": "r", "tools": ["add"], "skills": []})
    assert made.status_code == 201
    assert (await client.get(f"/sessions/{made.json()['id']}")).json()["config"]["tools"] == ["add"]
    model = await client.post("/sessions", json={"label": "r", "llm": "nope"})
    assert model.status_code == 422 and model.json()["code"] == "adapter_not_found"
    tool = await client.post("/sessions", json={"label": "r", "tools": ["nope"]})
    assert tool.status_code == 422 and tool.json()["code"] == "tool_not_found"
    fork = await client.post(f"/sessions/{made.json()['id']}/forks", json={"label": "c", "tools": ["nope"]})
    assert fork.status_code == 422 and fork.json()["code"] == "tool_not_found"
    assert len((await client.get("/sessions")).json()["items"]) == 1


async def test_the_system_prompt_is_editable(client: httpx.AsyncClient) -> None:
    sid = await create(client, "p", system_prompt="old")
    detail = (await client.put(f"/sessions/{sid}/system_prompt", json={"content": "new"})).json()
    assert detail["system_prompt"] == "new"
    await client.post(f"/sessions/{sid}/turns", json={"content": "hi"})
    assert (await client.get(f"/sessions/{sid}/context")).json()["system_prompt"] == "new"


async def test_a_fork_records_where_each_setting_came_from(client: httpx.AsyncClient) -> None:
    root = await create(client, "root", system_prompt="from the root")
    body = {"label": "child", "tools": ["add"]}
    child = (await client.post(f"/sessions/{root}/forks", json=body)).json()["id"]
    sources = (await client.get(f"/sessions/{child}")).json()["config"]["sources"]
    assert sources == {"system_prompt": "parent", "llm": "defaults", "tools": "options"}


async def test_ready_says_whether_the_store_answers(client: httpx.AsyncClient, store: BaseStore) -> None:
    assert (await client.get("/ready")).json() == {"status": "ok"}
    await store.close()
    response = await client.get("/ready")
    assert response.status_code == 503 and response.json()["code"] == "store_closed"
