"""``stellate serve`` against a loopback OpenAI-compatible server: the model it serves, its reflector, its profiles.

The server is a real ``stellate serve`` process; the model is `MockLLMServer` on loopback, which lists its models
at ``GET /v1/models`` as llama.cpp's server, vLLM and Ollama do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from cli_support import run_process

from stellate.cli.exit_codes import EXIT_STATUS
from stellate.client import Client
from stellate.testing.mock_llm import MockFailure, MockLLMServer, MockReply, MockRequest, MockStep

REFLECTION = {"synthesis": "The plan holds.", "insights": []}


def _port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def serving(cwd: Path, *args: str, out: list[str] | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """``stellate serve`` in a child process until the block ends; yields a client of its ``/v1`` once healthy.

    The client is async: the model's mock answers from this test's event loop, which must not be blocked.
    What the server printed is added to ``out`` once it has stopped.
    """
    port = _port()
    env = {**os.environ, "HOME": str(cwd / "home"), "OPENAI_API_KEY": "test"}
    command = [sys.executable, "-m", "stellate.cli", "serve", "--port", str(port), "--grace", "1", *args]
    child = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            for _ in range(300):
                if child.returncode is not None:
                    raise AssertionError((await child.communicate())[1].decode())
                try:
                    if (await client.get("/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            yield client
    finally:
        if child.returncode is None:
            child.terminate()
        printed, _ = await asyncio.wait_for(child.communicate(), 20)
        if out is not None:
            out.append(printed.decode())


def _is_reflection(request: MockRequest) -> bool:
    messages = request.body.get("messages") or [{}]
    return "Branches:" in str(messages[-1].get("content", ""))


def answers(reflection: MockStep) -> Any:
    """A handler: ``reflection`` to the reflector, "ok" to every session's turn."""

    def handle(request: MockRequest) -> MockStep:
        return reflection if _is_reflection(request) else MockReply(text="ok")

    return handle


async def test_serve_asks_the_server_for_its_model_and_reports_provider_model_and_base_url(tmp_path: Path) -> None:
    async with MockLLMServer(handler=answers(MockReply(text="ok")), models=["qwen2.5-7b"]) as model:
        base = model.openai_base_url
        banner: list[str] = []
        async with serving(tmp_path, "--provider", "openai", "--base-url", base, out=banner) as http:
            caps = (await http.get("/capabilities")).json()
            sid = (await http.post("/sessions", json={"label": "s"})).json()["id"]
            (await http.post(f"/sessions/{sid}/turns", json={"content": "hi"})).raise_for_status()
    assert caps["default_model"] == {"provider": "openai", "model": "qwen2.5-7b", "base_url": base}
    lines = banner[0].splitlines()
    assert lines[1].startswith("devtools UI (the star map): http://127.0.0.1:"), "the UI's address stays second"
    assert lines[2:4] == [
        f"model: openai · qwen2.5-7b · at {base}",
        "reflector: off (--reflector or a [reflector] table in the config file turns it on)",
    ]
    assert [r.body["model"] for r in model.requests] == ["qwen2.5-7b"]


async def test_without_a_reflector_capabilities_say_so_and_reflect_is_refused(tmp_path: Path) -> None:
    async with (
        MockLLMServer(handler=answers(MockReply(text="ok")), models=["m"]) as model,
        serving(tmp_path, "--provider", "openai", "--base-url", model.openai_base_url) as http,
    ):
        caps = (await http.get("/capabilities")).json()
        refused = await http.post("/reflect", json={})
    assert (caps["reflector"], caps["reflection"]) == (False, None)
    assert refused.status_code == 422 and refused.json()["code"] == "usage_error"
    assert "stellate serve --reflector" in refused.json()["detail"]


async def test_a_reflector_from_flags_reflects_with_its_own_model_and_prompt(tmp_path: Path) -> None:
    (tmp_path / "reflect.txt").write_text("Reflect, briefly, in JSON.", encoding="utf-8")
    async with MockLLMServer(handler=answers(MockReply(text=json.dumps(REFLECTION))), models=["a", "b"]) as model:
        base = model.openai_base_url
        flags = ["--provider", "openai", "--base-url", base, "--model", "a"]
        flags += ["--reflector-model", "b", "--reflector-prompt", "reflect.txt"]
        banner: list[str] = []
        async with (
            serving(tmp_path, *flags, out=banner) as http,
            Client(str(http.base_url).removesuffix("/v1/")) as client,
        ):
            caps = await client.capabilities()
            await client.create_session(label="branch")
            found = await client.reflect()
    assert caps["reflector"] is True
    assert caps["reflection"] == {
        "provider": "openai",
        "model": "b",
        "base_url": base,
        "prompt": "custom",
        "every_seconds": None,
    }
    assert found.synthesis == "The plan holds."
    assert "reflector: openai · b, own prompt, on request" in banner[0]
    [asked] = [r for r in model.requests if _is_reflection(r)]
    assert asked.body["model"] == "b" and asked.body["messages"][0]["content"] == "Reflect, briefly, in JSON."


async def test_a_failed_reflection_is_an_error_event_in_the_history(tmp_path: Path) -> None:
    failing = MockFailure(status=400, message="the reflector's model refused")
    async with MockLLMServer(handler=answers(failing), models=["m"]) as model:
        flags = ["--provider", "openai", "--base-url", model.openai_base_url, "--reflector"]
        async with serving(tmp_path, *flags) as http:
            (await http.post("/sessions", json={"label": "branch"})).raise_for_status()
            refused = await http.post("/reflect", json={})
            history = (await http.get("/events/history", params={"types": "error"})).json()
    assert refused.status_code >= 400
    [event] = history["events"]
    assert event["data"]["source"] == "reflector" and event["data"]["code"] == refused.json()["code"]
    assert "refused" in event["data"]["message"]


async def test_the_config_files_reflector_runs_on_its_schedule(tmp_path: Path) -> None:
    reflection = {"synthesis": "s", "insights": [{"session_id": "branch-1", "content": "look at the budget"}]}
    (tmp_path / "config.toml").write_text('[reflector]\nevery = 0.2\nlanguage = "zh"\n', encoding="utf-8")
    async with MockLLMServer(handler=answers(MockReply(text=json.dumps(reflection))), models=["m"]) as model:
        flags = ["--config", "config.toml", "--provider", "openai", "--base-url", model.openai_base_url]
        async with serving(tmp_path, *flags) as http:
            caps = (await http.get("/capabilities")).json()
            (await http.post("/sessions", json={"label": "branch", "session_id": "branch-1"})).raise_for_status()
            insight = None
            for _ in range(400):  # bounded: the schedule ticks every 0.2 s
                insight = (await http.get("/sessions/branch-1")).json()["insight"]
                if insight:
                    break
                await asyncio.sleep(0.05)
    assert caps["reflection"]["every_seconds"] == 0.2 and caps["reflection"]["prompt"] == "built-in"
    assert [r.body["model"] for r in model.requests if _is_reflection(r)][0] == "m", "the served model reflects"
    assert insight == "look at the budget"
    assert "你统筹" in next(r for r in model.requests if _is_reflection(r)).body["messages"][0]["content"]


def test_a_reflector_without_a_provider_or_with_a_missing_prompt_is_refused(tmp_path: Path) -> None:
    alone = run_process("serve", "--reflector", "--db", str(tmp_path / "a.db"))
    assert alone.status == EXIT_STATUS["provider_not_configured"] and "reflector" in alone.err
    missing = run_process("serve", "--reflector-prompt", str(tmp_path / "nope.txt"), "--db", str(tmp_path / "b.db"))
    assert missing.status == EXIT_STATUS["config_invalid"] and "nope.txt" in missing.err
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()


def _skill(root: Path, name: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} things\n---\nHow to {name}.\n")


async def test_a_config_profile_carries_skills_a_model_and_tools(tmp_path: Path) -> None:
    for name in ("search", "summarize", "translate"):
        _skill(tmp_path / "skills", name)
    (tmp_path / "config.toml").write_text(
        'skills_dir = "skills"\n'
        "[profiles.region-expert]\n"
        'system_prompt = "You know ${region}."\nmode = "preset"\n'
        'skills = ["search", "summarize"]\nmodel = "b"\ntools = []\n',
        encoding="utf-8",
    )
    async with MockLLMServer(handler=answers(MockReply(text="ok")), models=["a", "b"]) as model:
        flags = ["--config", "config.toml", "--provider", "openai", "--base-url", model.openai_base_url, "--model", "a"]
        async with serving(tmp_path, *flags) as http:
            caps = (await http.get("/capabilities")).json()
            root = (await http.post("/sessions", json={"label": "plan"})).json()["id"]
            body = {"label": "Japan", "profile": "region-expert", "profile_vars": {"region": "Japan"}}
            child = (await http.post(f"/sessions/{root}/forks", json=body)).json()["id"]
            (await http.post(f"/sessions/{child}/turns", json={"content": "hi"})).raise_for_status()
            config = (await http.get(f"/sessions/{child}")).json()["config"]
    assert {s["name"] for s in caps["skills"]} == {"search", "summarize", "translate"}
    assert {"name": "b", "provider": "openai", "model": "b"} in caps["models"]
    assert (config["skills"], config["llm"], config["tools"]) == (["search", "summarize"], "b", [])
    [turn] = model.requests
    assert turn.body["model"] == "b" and turn.body["messages"][0]["content"].startswith("You know Japan.")
    offered = json.dumps(turn.body.get("tools", []))
    assert "summarize" in offered and "translate" not in offered
