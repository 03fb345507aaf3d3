from __future__ import annotations

from pathlib import Path

import pytest

from stellate.cli.settings import (
    ConfigFile,
    ProfileEntry,
    ProviderFlags,
    fork_profiles,
    load_config,
    resolve_provider,
)
from stellate.errors import UsageError

FILE = ConfigFile(
    provider="anthropic", model="file-model", base_url="http://file", api_key="file-key", context_tokens=10
)


def test_flags_beat_environment_beat_file() -> None:
    env = {"STELLATE_PROVIDER": "deepseek", "STELLATE_MODEL": "env-model", "STELLATE_CONTEXT_TOKENS": "20"}
    settings = resolve_provider(ProviderFlags(provider="openai"), env, FILE)
    assert settings.provider == "openai" and settings.model == "env-model" and settings.context_tokens == 20
    assert settings.base_url == "http://file" and settings.api_key == "file-key"
    assert resolve_provider(ProviderFlags(), {}, FILE).provider == "anthropic"


def test_the_api_key_comes_from_stellate_then_the_vendor_variable_then_the_file() -> None:
    flags = ProviderFlags(provider="deepseek")
    assert resolve_provider(flags, {"DEEPSEEK_API_KEY": "v", "STELLATE_API_KEY": "s"}, FILE).api_key == "s"
    assert resolve_provider(flags, {"DEEPSEEK_API_KEY": "v", "OPENAI_API_KEY": "o"}, FILE).api_key == "v"
    assert resolve_provider(flags, {"OPENAI_API_KEY": "o"}, FILE).api_key == "file-key"


def test_a_vendor_key_alone_picks_its_provider() -> None:
    assert resolve_provider(ProviderFlags(), {"ANTHROPIC_API_KEY": "k"}, ConfigFile()).provider == "anthropic"
    assert resolve_provider(ProviderFlags(), {}, ConfigFile()).provider is None


def test_a_bad_token_count_is_a_config_error() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_provider(ProviderFlags(), {"STELLATE_CONTEXT_TOKENS": "lots"}, ConfigFile())
    assert caught.value.code == "config_invalid" and "STELLATE_CONTEXT_TOKENS" in caught.value.message


def test_the_config_file_is_read_from_the_flag_or_the_env(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('provider = "deepseek"\n[profiles.x]\nsystem_prompt = "X"\n')
    assert load_config(str(path), {}).provider == "deepseek"
    assert load_config(None, {"STELLATE_CONFIG": str(path)}).profiles["x"].system_prompt == "X"
    assert load_config(None, {}) == ConfigFile()  # the default file may be absent


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("provider = ", "not valid TOML"),
        ("provder = 'openai'\n", "provder"),
        ("context_tokens = -1\n", "context_tokens"),
    ],
)
def test_a_bad_config_file_is_refused_with_the_reason(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_config(str(path), {})
    assert caught.value.code == "config_invalid" and needle in caught.value.message


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        load_config(str(tmp_path / "missing.toml"), {})
    assert caught.value.code == "config_invalid"


def test_profile_templates_are_filled_from_fork_variables() -> None:
    entry = ProfileEntry(system_prompt="Expert in ${topic}; cost $5.", mode="preset")
    profile = fork_profiles(ConfigFile(profiles={"expert": entry}))["expert"]
    assert profile.system_prompt_fn is not None
    assert profile.system_prompt_fn({"topic": "visas"}) == "Expert in visas; cost $5."
    assert profile.system_prompt_mode == "preset"


def test_default_profiles_apply_when_the_file_has_none() -> None:
    assert set(fork_profiles(ConfigFile())) == {"researcher", "expert"}
