"""Spaces and keys: a key sees only its space; every route refuses another space's sessions with 404."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from server_support import Keys, bearer

from stellate.server.problems import problem_responses

# Every route with a session id, and a request that would succeed on the caller's own session.
SESSION_ROUTES: list[tuple[str, str, dict[str, object] | None]] = [
    ("GET", "/sessions/{id}", None),
    ("PATCH", "/sessions/{id}", {"label": "stolen"}),
    ("POST", "/sessions/{id}/archive", None),
    ("PUT", "/sessions/{id}/insight", {"content": "x"}),
    ("DELETE", "/sessions/{id}/insight", None),
    ("PUT", "/sessions/{id}/memory", {"content": "x"}),
    ("PUT", "/sessions/{id}/system_prompt", {"content": "x"}),
    ("POST", "/sessions/{id}/consolidate", None),
    ("POST", "/sessions/{id}/turns", {"content": "hi"}),
    ("POST", "/sessions/{id}/turns/current/cancel", None),
    ("POST", "/sessions/{id}/forks", {"label": "x"}),
    ("GET", "/sessions/{id}/events", None),
    ("GET", "/sessions/{id}/events/stream", None),
    ("GET", "/sessions/{id}/transcript", None),
    ("GET", "/sessions/{id}/context", None),
    ("GET", "/sessions/{id}/lineage", None),
    ("GET", "/sessions/{id}/usage", None),
    ("GET", "/sessions/{id}/context-window", None),
    ("POST", "/sessions/{id}/edit", {"turn": 1, "content": "x"}),
    ("POST", "/sessions/{id}/regenerate", {}),
    ("POST", "/sessions/{id}/replay", {"from_turn": 1}),
    ("GET", "/sessions/{id}/approvals", None),
    ("POST", "/sessions/{id}/approvals/{call_id}", {"decision": "approve"}),
    ("GET", "/sessions/{id}/erase-plan", None),
    ("DELETE", "/sessions/{id}", None),
]


def test_the_isolation_table_covers_every_session_route(app: FastAPI) -> None:
    routes = {
        (method, path.removeprefix("/v1"))
        for path, item in app.openapi()["paths"].items()
        if "{session_id}" in path
        for method in (m.upper() for m in item)
    }
    assert routes == {(m, p.replace("{id}", "{session_id}")) for m, p, _ in SESSION_ROUTES}


async def test_a_key_of_another_space_gets_404_on_every_session_route(keyed: httpx.AsyncClient, keys: Keys) -> None:
    alpha, beta = bearer(keys.alpha), bearer(keys.beta)
    sid = (await keyed.post("/sessions", json={"label": "secret"}, headers=alpha)).json()["id"]
    await keyed.post(f"/sessions/{sid}/turns", json={"content": "private"}, headers=alpha)
    before = (await keyed.get(f"/sessions/{sid}/events", headers=alpha)).json()["events"]
    for method, path, body in SESSION_ROUTES:
        response = await keyed.request(method, path.format(id=sid, call_id="c1"), json=body, headers=beta)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["code"] in ("session_not_found", "source_not_found") and "private" not in response.text
    fork_onto = await keyed.post("/sessions", json={"label": "mine"}, headers=beta)
    hang = await keyed.post(
        f"/sessions/{fork_onto.json()['id']}/forks", json={"label": "x", "topology_parent_id": sid}, headers=beta
    )
    assert hang.status_code == 404
    for path in ("/sessions", "/forest", "/forest/nodes"):
        listed = await keyed.get(path, headers=beta)
        assert listed.status_code == 200 and sid not in listed.text
    assert (await keyed.get("/sessions", params={"root": sid}, headers=beta)).status_code == 404
    assert (await keyed.get(f"/sessions/{sid}/events", headers=alpha)).json()["events"] == before
    assert (await keyed.get("/info", headers=beta)).json()["space"] == "beta"


async def test_without_a_valid_key_nothing_is_served(keyed: httpx.AsyncClient, keys: Keys) -> None:
    for headers in ({}, bearer("stl_wrong"), {"Authorization": "Basic abc"}):
        response = await keyed.get("/sessions", headers=headers)
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"
        assert response.headers["www-authenticate"] == "Bearer"
    assert (await keyed.get("/health")).status_code == 200


async def test_a_read_only_key_reads_but_does_not_write(keyed: httpx.AsyncClient, keys: Keys) -> None:
    alpha, reader = bearer(keys.alpha), bearer(keys.alpha_read_only)
    sid = (await keyed.post("/sessions", json={"label": "shared"}, headers=alpha)).json()["id"]
    assert (await keyed.get(f"/sessions/{sid}", headers=reader)).status_code == 200
    refused = await keyed.post(f"/sessions/{sid}/turns", json={"content": "hi"}, headers=reader)
    assert refused.status_code == 403 and refused.json()["code"] == "read_only_key"


async def test_a_revoked_key_stops_working_at_once(keyed: httpx.AsyncClient, keys: Keys) -> None:
    ring = keys.ring
    assert (await keyed.get("/sessions", headers=bearer(keys.beta))).status_code == 200
    [beta] = [k for k in ring.keys() if k.space == "beta"]
    ring.revoke(beta.id)
    assert (await keyed.get("/sessions", headers=bearer(keys.beta))).status_code == 401


def test_the_key_file_keeps_only_hashes(keys: Keys) -> None:
    ring = keys.ring
    text = ring.path.read_text()
    assert keys.alpha not in text and keys.beta not in text
    assert ring.find(keys.alpha).space == "alpha"


def test_every_route_documents_its_problems(app: FastAPI) -> None:
    schema = app.openapi()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if path == "/v1/health":
                continue
            for status in problem_responses():
                assert str(status) in operation["responses"], (method, path, status)
            assert "application/problem+json" in operation["responses"]["422"]["content"], (method, path)
