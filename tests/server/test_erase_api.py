"""Erasing over HTTP: DELETE a session or a space, its plan, prune, tombstones, errors, and the Python client."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from server_support import Keys, bearer

from stellate.client import Client
from stellate.errors import HasDependentsError, NotFoundError

SECRET = "SECRET-0b9e-over-http"


async def create(client: httpx.AsyncClient, label: str, **headers: str) -> str:
    response = await client.post("/sessions", json={"label": label}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def fork(client: httpx.AsyncClient, source: str, label: str, **headers: str) -> str:
    body = {"label": label, "context": "inherit"}
    response = await client.post(f"/sessions/{source}/forks", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def turn(client: httpx.AsyncClient, sid: str, text: str, **headers: str) -> None:
    response = await client.post(f"/sessions/{sid}/turns", json={"content": text}, headers=headers)
    assert response.status_code == 200, response.text


async def test_delete_names_dependents_then_keeps_them_whole(client: httpx.AsyncClient) -> None:
    """DELETE without a choice is 409 has_dependents; the plan names what goes; keep leaves the fork whole."""
    root = await create(client, "root")
    await turn(client, root, "hello")
    child = await fork(client, root, "child")
    before = (await client.get(f"/sessions/{child}/messages")).json()

    refused = await client.delete(f"/sessions/{root}")
    assert refused.status_code == 409
    assert refused.json()["code"] == "has_dependents" and refused.json()["details"]["dependents"] == [child]
    plan = (await client.get(f"/sessions/{root}/erase-plan", params={"dependents": "keep"})).json()
    assert plan == {"erased": [root], "kept": [child], "scrubbed": True}

    done = await client.delete(f"/sessions/{root}", params={"dependents": "keep"})
    assert done.status_code == 200 and done.json()["erased"] == [root] and done.json()["kept"] == [child]
    gone = await client.get(f"/sessions/{root}")
    assert gone.status_code == 404 and gone.json()["code"] == "session_not_found"
    assert (await client.get(f"/sessions/{child}/messages")).json() == before
    [stone] = (await client.get("/tombstones")).json()
    assert (stone["id"], stone["erased_by"]) == (root, "local")
    erased = (await client.get("/events/history", params={"types": "session_erased"})).json()["events"]
    assert [e["data"]["session_id"] for e in erased] == [root]


async def test_the_event_history_of_an_erased_session_goes(client: httpx.AsyncClient) -> None:
    """Rows of /v1/events history about the erased session go; the erase itself is recorded without content."""
    sid = await create(client, "secret")
    await turn(client, sid, f"remember {SECRET}")
    other = await create(client, "other")
    assert SECRET in (await client.get("/events/history", params={"limit": 1000})).text
    assert (await client.delete(f"/sessions/{sid}")).status_code == 200
    events = (await client.get("/events/history", params={"limit": 1000})).json()["events"]
    assert SECRET not in str(events)
    assert {e["data"].get("session_id") for e in events} == {other, sid}
    assert [e["type"] for e in events if e["data"].get("session_id") == sid] == ["session_erased"]


async def test_a_subtree_delete_takes_the_branches(client: httpx.AsyncClient) -> None:
    """``subtree=true`` erases the topology descendants too; other roots stay."""
    root = await create(client, "root")
    child = await fork(client, root, "child")
    grand = await fork(client, child, "grand")
    other = await create(client, "other")
    done = (await client.delete(f"/sessions/{root}", params={"subtree": "true"})).json()
    assert done["erased"] == [root, child, grand]
    assert [d["id"] for d in (await client.get("/sessions")).json()["items"]] == [other]


async def test_erasing_the_space_needs_all_and_takes_everything(client: httpx.AsyncClient) -> None:
    """DELETE /sessions without all=true changes nothing (422); with it, the space is empty."""
    ids = [await create(client, f"s{n}") for n in range(3)]
    refused = await client.delete("/sessions")
    assert refused.status_code == 422 and refused.json()["code"] == "usage_error"
    assert len((await client.get("/sessions")).json()["items"]) == 3
    done = (await client.delete("/sessions", params={"all": "true"})).json()
    assert sorted(done["erased"]) == sorted(ids)
    assert (await client.get("/sessions")).json()["items"] == []


async def test_prune_over_http_dry_run_then_for_real(client: httpx.AsyncClient) -> None:
    """POST /prune names the archived sessions past the age (dry run), then erases exactly those."""
    old = await create(client, "old")
    live = await create(client, "live")
    assert (await client.post(f"/sessions/{old}/archive")).status_code == 200
    dry = (await client.post("/prune", json={"older_than": 0, "dry_run": True})).json()
    assert dry["erased"] == [old]
    done = (await client.post("/prune", json={"older_than": 0})).json()
    assert done["erased"] == dry["erased"]
    assert [d["id"] for d in (await client.get("/sessions")).json()["items"]] == [live]


async def test_tombstones_name_the_key_and_a_read_only_key_may_not_erase(keyed: httpx.AsyncClient, keys: Keys) -> None:
    """An erase with a key records the key's id; a read-only key gets 403; another space sees nothing."""
    sid = await create(keyed, "mine", **bearer(keys.alpha))
    refused = await keyed.delete(f"/sessions/{sid}", headers=bearer(keys.alpha_read_only))
    assert refused.status_code == 403 and refused.json()["code"] == "read_only_key"
    elsewhere = await keyed.delete(f"/sessions/{sid}", headers=bearer(keys.beta))
    assert elsewhere.status_code == 404
    assert (await keyed.delete(f"/sessions/{sid}", headers=bearer(keys.alpha))).status_code == 200
    [stone] = (await keyed.get("/tombstones", headers=bearer(keys.alpha))).json()
    alpha_id = next(k.id for k in keys.ring.keys() if k.space == "alpha" and not k.read_only)
    assert stone["erased_by"] == alpha_id
    assert (await keyed.get("/tombstones", headers=bearer(keys.beta))).json() == []


async def test_the_python_client_erases_with_the_same_errors(app: FastAPI) -> None:
    """`stellate.client.Client` plans and erases; has_dependents and session_not_found keep their classes."""
    async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as remote:
        root = await remote.create_session(label="root")
        child = await remote.fork_session(root.id, label="child", context="inherit")
        with pytest.raises(HasDependentsError) as info:
            await remote.erase_session(root.id)
        assert info.value.details["dependents"] == [child.id]
        assert (await remote.plan_erase(root.id, dependents="cascade")).erased == (root.id, child.id)
        plan = await remote.erase_session(root.id, dependents="cascade")
        assert plan.erased == (root.id, child.id)
        assert [t.id for t in await remote.list_tombstones()] == [root.id, child.id]
        with pytest.raises(NotFoundError):
            await remote.get_session_digest(child.id)
        assert (await remote.erase_space()).erased == ()
