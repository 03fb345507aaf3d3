from __future__ import annotations

import json
from pathlib import Path

import pytest

from stellate.cli.providers import ProviderSettings, UnconfiguredLLM, adapter_or_placeholder, build_adapter
from stellate.errors import ProviderError, UsageError
from stellate.llm import LLMRequest, ScriptedLLM
from stellate.llm.anthropic import AnthropicAdapter
from stellate.llm.openai import OpenAIAdapter
from stellate.log.messages import UserMessage


def test_hosted_providers_get_their_default_model_host_and_window() -> None:
    deepseek = build_adapter(ProviderSettings(provider="deepseek", api_key="k"))
    assert isinstance(deepseek, OpenAIAdapter)
    assert (deepseek.provider, deepseek.model, deepseek.max_context_tokens) == ("deepseek", "deepseek-chat", 64_000)
    claude = build_adapter(ProviderSettings(provider="anthropic", api_key="k", model="m", context_tokens=1000))
    assert isinstance(claude, AnthropicAdapter) and (claude.model, claude.max_context_tokens) == ("m", 1000)


def test_a_hosted_provider_without_its_key_says_which_variable_to_set() -> None:
    with pytest.raises(UsageError) as caught:
        build_adapter(ProviderSettings(provider="openai"))
    assert caught.value.code == "provider_not_configured" and "OPENAI_API_KEY" in caught.value.message


def test_an_openai_compatible_server_of_ones_own_needs_no_key() -> None:
    llm = build_adapter(ProviderSettings(provider="openai", base_url="http://127.0.0.1:8080/v1", model="qwen"))
    assert isinstance(llm, OpenAIAdapter) and llm.model == "qwen"


def test_no_provider_and_unknown_providers_are_refused() -> None:
    with pytest.raises(UsageError) as none:
        build_adapter(ProviderSettings())
    assert none.value.code == "provider_not_configured" and "STELLATE_PROVIDER" in none.value.message
    with pytest.raises(UsageError) as unknown:
        build_adapter(ProviderSettings(provider="skynet"))
    assert unknown.value.code == "config_invalid" and "openai" in unknown.value.message


def test_the_local_provider_builds_the_llama_cpp_adapter_without_loading_it() -> None:
    llm = build_adapter(ProviderSettings(provider="local", context_tokens=1024))
    assert llm.provider == "local" and llm.max_context_tokens == 1024


async def test_the_scripted_provider_replays_a_file_then_echoes(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps(["first", {"error": "down"}]))
    llm = build_adapter(ProviderSettings(provider="scripted", script=str(script)))
    assert isinstance(llm, ScriptedLLM)
    request = LLMRequest(messages=[UserMessage(content="hello")])
    assert (await llm.complete(request)).message.content == "first"
    with pytest.raises(ProviderError):
        await llm.complete(request)
    assert (await llm.complete(request)).message.content == "(scripted) you said: hello"


def test_a_bad_script_is_a_config_error(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text('{"not": "a list"}')
    with pytest.raises(UsageError) as caught:
        build_adapter(ProviderSettings(provider="scripted", script=str(script)))
    assert caught.value.code == "config_invalid"


async def test_without_a_provider_commands_get_a_stand_in_that_refuses_calls() -> None:
    llm, configured = adapter_or_placeholder(ProviderSettings())
    assert not configured and isinstance(llm, UnconfiguredLLM)
    with pytest.raises(UsageError) as caught:
        await llm.complete(LLMRequest(messages=[UserMessage(content="x")]))
    assert caught.value.code == "provider_not_configured"
