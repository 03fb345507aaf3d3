"""What a web page cannot make the server do: a foreign Host, a foreign Origin, a form body (every route)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from server_support import Keys, bearer, make_agent
from test_problems import is_problem

from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.security import HostPolicy, is_loopback_name, split_host
from stellate.store.memory import MemoryStore

_WRITES = {"POST", "PUT", "PATCH", "DELETE"}
_CATALOGUE = create_app(make_agent(MemoryStore(), ScriptedLLM(default="ok")))


def _routes(methods: set[str]) -> list[tuple[str, str]]:
    """(method, path) of every API route, path parameters filled with a session that does not exist."""
    found = []
    for template, operations in _CATALOGUE.openapi()["paths"].items():
        path = re.sub(r"\{[^}]+\}", "s-none", template)
        found += [(method.upper(), path) for method in operations if method.upper() in methods]
    return found


WRITES = _routes(_WRITES)
EVERY = _routes({"GET", *_WRITES})
FORMS = [
    ("application/x-www-form-urlencoded", b"label=pwned"),
    ("multipart/form-data; boundary=x", b'--x\r\nContent-Disposition: form-data; name="label"\r\n\r\npwned\r\n--x--'),
    ("text/plain", b'{"label": "pwned"}'),
]


def test_the_catalogue_has_the_bodiless_posts() -> None:
    assert ("POST", "/v1/sessions/s-none/archive") in WRITES and ("DELETE", "/v1/sessions/s-none/insight") in WRITES
    assert len(WRITES) >= 12


@pytest.fixture
def app() -> FastAPI:
    return create_app(make_agent(MemoryStore(), ScriptedLLM(default="ok")))


@pytest.fixture
async def http(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1:8700") as client:
        yield client


async def _nothing_was_created(http: httpx.AsyncClient) -> bool:
    return (await http.get("/v1/sessions")).json()["items"] == []


@pytest.mark.parametrize(("method", "path"), EVERY)
async def test_dev_mode_refuses_a_host_that_is_not_loopback(http: httpx.AsyncClient, method: str, path: str) -> None:
    """DNS rebinding: a page whose own name points at 127.0.0.1 sends its name as Host."""
    headers = {"Host": "attacker.example:8700", "Origin": "http://attacker.example:8700"}
    response = await http.request(method, path, headers=headers, json={"label": "pwned"})
    assert is_problem(response, 421, "host_not_allowed")
    assert await _nothing_was_created(http)


@pytest.mark.parametrize(("method", "path"), WRITES)
async def test_a_write_from_a_foreign_origin_is_refused(http: httpx.AsyncClient, method: str, path: str) -> None:
    response = await http.request(method, path, headers={"Origin": "http://attacker.example"})
    assert is_problem(response, 403, "origin_not_allowed")
    assert is_problem(await http.request(method, path, headers={"Origin": "null"}), 403, "origin_not_allowed")
    assert await _nothing_was_created(http)


@pytest.mark.parametrize(("content_type", "body"), FORMS)
@pytest.mark.parametrize(("method", "path"), WRITES)
async def test_a_write_with_a_form_body_is_refused(
    http: httpx.AsyncClient, method: str, path: str, content_type: str, body: bytes
) -> None:
    """What a cross-origin HTML form (or a no-cors fetch) can send; the Origin is left out, as by old browsers."""
    response = await http.request(method, path, content=body, headers={"Content-Type": content_type})
    assert is_problem(response, 415, "unsupported_media_type")
    assert await _nothing_was_created(http)


@pytest.mark.parametrize(("method", "path"), WRITES)
async def test_a_body_without_a_content_type_is_refused(http: httpx.AsyncClient, method: str, path: str) -> None:
    response = await http.request(method, path, content=b'{"label": "pwned"}')
    assert is_problem(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("origin", [None, "http://127.0.0.1:8700", "http://localhost:8700"])
async def test_the_ui_of_the_same_origin_and_programs_may_write(app: FastAPI, origin: str | None) -> None:
    """What the devtools UI sends: JSON with the page's own Origin, and bodiless POSTs with no content type."""
    host = "localhost:8700" if origin and "localhost" in origin else "127.0.0.1:8700"
    headers = {"Origin": origin} if origin else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=f"http://{host}") as http:
        created = await http.post("/v1/sessions", json={"label": "ok"}, headers=headers)
        assert created.status_code == 201
        archived = await http.post(f"/v1/sessions/{created.json()['id']}/archive", headers=headers)
        assert archived.status_code == 200 and archived.json()["status"] == "archived"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10:1", "localhost:8700", "[::1]:8700", "LOCALHOST."])
async def test_every_loopback_host_is_served(http: httpx.AsyncClient, host: str) -> None:
    assert (await http.get("/v1/info", headers={"Host": host})).status_code == 200


async def test_a_deployment_names_its_hosts_and_origins() -> None:
    app = create_app(
        make_agent(MemoryStore(), ScriptedLLM(default="ok")),
        allowed_hosts=["stellate.example.com", "*.internal.example"],
        allowed_origins=["https://app.example.com"],
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="https://stellate.example.com") as http:
        assert (await http.get("/v1/info")).status_code == 200
        assert (await http.get("/v1/info", headers={"Host": "a.internal.example"})).status_code == 200
        assert is_problem(await http.get("/v1/info", headers={"Host": "internal.example.org"}), 421, "host_not_allowed")
        page = {"Origin": "https://app.example.com"}
        assert (await http.post("/v1/sessions", json={"label": "from the app"}, headers=page)).status_code == 201
        own = {"Origin": "https://stellate.example.com"}
        assert (await http.post("/v1/sessions", json={"label": "own"}, headers=own)).status_code == 201
        other = {"Origin": "https://evil.example.com"}
        assert is_problem(await http.post("/v1/sessions", json={}, headers=other), 403, "origin_not_allowed")


async def test_with_keys_any_host_is_served_but_origins_are_still_checked(llm: ScriptedLLM, keys: Keys) -> None:
    store = MemoryStore()
    app = create_app(
        make_agent(store, llm), spaces=lambda space: make_agent(store.in_space(space), llm), keys=keys.ring
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://10.0.0.5:8700") as http:
        assert (await http.get("/v1/info", headers=bearer(keys.alpha))).status_code == 200
        foreign = {**bearer(keys.alpha), "Origin": "http://attacker.example"}
        assert is_problem(await http.post("/v1/sessions", json={}, headers=foreign), 403, "origin_not_allowed")
        form = {**bearer(keys.alpha), "Content-Type": "text/plain"}
        assert is_problem(await http.post("/v1/sessions", content=b"{}", headers=form), 415, "unsupported_media_type")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8700", ("127.0.0.1", 8700)),
        ("[::1]:8700", ("::1", 8700)),
        ("[::1]", ("::1", None)),
        ("Example.COM.", ("example.com", None)),
        ("example.com:http", ("example.com", None)),
    ],
)
def test_host_headers_are_split_into_name_and_port(value: str, expected: tuple[str, int | None]) -> None:
    assert split_host(value) == expected


def test_only_names_of_this_machine_are_loopback() -> None:
    assert all(is_loopback_name(n) for n in ("localhost", "127.0.0.1", "127.255.0.9", "::1"))
    assert not any(is_loopback_name(n) for n in ("localhost.attacker.example", "0.0.0.0", "10.0.0.1", "::"))


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        ("http://127.0.0.1:8700", "127.0.0.1:8700", True),
        ("http://127.0.0.1:8701", "127.0.0.1:8700", False),
        ("https://stellate.example.com", "stellate.example.com", True),  # a proxy ending TLS
        ("https://stellate.example.com", "stellate.example.com:443", True),
        ("http://stellate.example.com.evil", "stellate.example.com", False),
        ("file://", "127.0.0.1:8700", False),
        ("http://127.0.0.1:99999", "127.0.0.1:8700", False),
    ],
)
def test_same_origin_is_the_host_with_its_port(origin: str, host: str, same: bool) -> None:
    assert HostPolicy.of(None, with_keys=False).allows_origin(origin, host) is same
