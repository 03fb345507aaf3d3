"""The devtools UI as files: served at / under a strict policy, translations complete, and the slot it edits."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.server import create_app
from stellate.server.ui import UI_DIR


@pytest.fixture
async def plain() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Agent("memory://", llm=ScriptedLLM(default="ok")))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1") as http:
        yield http


async def test_the_page_is_served_at_the_root_under_a_strict_policy(plain: httpx.AsyncClient) -> None:
    page = await plain.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/ui/js/main.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe" not in policy and "connect-src 'self'" in policy
    assert "img-src 'self' data:" in policy, "no remote image is ever loaded"
    script = await plain.get("/ui/js/main.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert script.headers["content-security-policy"] == policy
    assert "content-security-policy" not in (await plain.get("/v1/health")).headers, "the API is left alone"


async def test_files_outside_the_ui_folder_are_not_served(plain: httpx.AsyncClient) -> None:
    assert (await plain.get("/ui/../ui.py")).status_code == 404
    assert (await plain.get("/ui/%2e%2e/app.py")).status_code == 404


def test_nothing_is_fetched_from_another_origin() -> None:
    for path in UI_DIR.rglob("*"):
        if path.suffix in {".html", ".js", ".css"}:
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), path
            assert "@import" not in text and "url(http" not in text, path
            assert "innerHTML" not in text and "insertAdjacentHTML" not in text, f"{path} builds DOM from text only"


def test_both_languages_have_every_key_the_scripts_use() -> None:
    english = json.loads((UI_DIR / "i18n" / "en.json").read_text(encoding="utf-8"))
    chinese = json.loads((UI_DIR / "i18n" / "zh.json").read_text(encoding="utf-8"))
    assert english.keys() == chinese.keys()
    assert all(value.strip() for value in [*english.values(), *chinese.values()])
    used = set()
    prefixes = set()
    for script in (UI_DIR / "js").glob("*.js"):
        text = script.read_text(encoding="utf-8")
        used |= set(re.findall(r"\bt\('([a-zA-Z.]+[a-zA-Z])'", text))
        prefixes |= set(re.findall(r"\bt\('([a-zA-Z.]+\.)' \+", text))
    assert used - english.keys() == set()
    for prefix in prefixes:
        assert any(key.startswith(prefix) for key in english), prefix


async def test_the_system_prompt_can_be_replaced(client: httpx.AsyncClient) -> None:
    made = (await client.post("/sessions", json={"label": "S", "system_prompt": "old"})).json()
    await client.post(f"/sessions/{made['id']}/turns", json={"content": "hi"})
    detail = await client.put(f"/sessions/{made['id']}/system_prompt", json={"content": "new"})
    assert detail.status_code == 200 and detail.json()["system_prompt"] == "new"
    await client.post(f"/sessions/{made['id']}/turns", json={"content": "again"})
    events = (await client.get(f"/sessions/{made['id']}/events")).json()["events"]
    steps = [e["seq"] for e in events if e["type"] == "assistant/message"]
    first = (await client.get(f"/sessions/{made['id']}/context", params={"step": steps[0]})).json()
    second = (await client.get(f"/sessions/{made['id']}/context", params={"step": steps[1]})).json()
    assert (first["system_prompt"], second["system_prompt"]) == ("old", "new"), "earlier calls keep theirs"
    missing = await client.put("/sessions/nope/system_prompt", json={"content": "x"})
    assert missing.status_code == 404 and missing.json()["code"] == "session_not_found"
