from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

from stellate.errors import UsageError
from stellate.llm import LLMAdapter, ScriptedLLM
from stellate.llm.registry import BUILTIN_ADAPTERS, AdapterRegistry


def test_builtin_name_resolves_to_its_adapter_class() -> None:
    assert AdapterRegistry().resolve("scripted") is ScriptedLLM


def test_create_builds_an_adapter_from_options() -> None:
    llm = AdapterRegistry().create("scripted", script=["hi"], model="demo")
    assert isinstance(llm, LLMAdapter) and llm.model == "demo"


@pytest.mark.parametrize("name", sorted(BUILTIN_ADAPTERS))
def test_every_builtin_import_path_resolves(name: str, require_extra: Callable[[str, str], ModuleType]) -> None:
    if name == "local":
        require_extra("llama_cpp", "local")
    assert callable(AdapterRegistry().resolve(name))


def test_unknown_name_is_a_usage_error_listing_known_names() -> None:
    with pytest.raises(UsageError, match="known: anthropic, function, local, openai, scripted"):
        AdapterRegistry().resolve("gpt")


def test_registered_factory_is_resolved_by_name() -> None:
    registry = AdapterRegistry()
    registry.register("demo", lambda **options: ScriptedLLM(["demo reply"], **options))
    assert registry.create("demo", model="x").model == "x"


def test_registering_a_taken_name_needs_replace() -> None:
    registry = AdapterRegistry()
    with pytest.raises(UsageError, match="already registered"):
        registry.register("openai", ScriptedLLM)
    registry.register("openai", ScriptedLLM, replace=True)
    assert registry.resolve("openai") is ScriptedLLM


def test_import_path_without_attribute_separator_is_refused() -> None:
    with pytest.raises(UsageError, match="module:attribute"):
        AdapterRegistry().register("x", "stellate.llm.scripted.ScriptedLLM")


def test_import_path_naming_a_missing_attribute_is_a_usage_error() -> None:
    registry = AdapterRegistry({"x": "stellate.llm.scripted:Nope"})
    with pytest.raises(UsageError, match="no attribute 'Nope'"):
        registry.resolve("x")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)


def test_importing_the_llm_layer_loads_no_provider_module_or_extra() -> None:
    result = run_python(
        "import sys, stellate.llm\n"
        "loaded = [m for m in ('httpx', 'tiktoken', 'llama_cpp', 'stellate.llm.openai', 'stellate.llm.anthropic',"
        " 'stellate.llm.local') if m in sys.modules]\n"
        "print(loaded)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("name", "blocked", "hint"),
    [
        ("openai", "httpx", 'pip install "stellate[openai]"'),
        ("anthropic", "httpx", 'pip install "stellate[anthropic]"'),
        ("local", "llama_cpp", 'pip install "stellate[local]"'),
    ],
)
def test_missing_extra_raises_import_error_with_install_hint(name: str, blocked: str, hint: str) -> None:
    # A None entry in sys.modules makes that import fail as if the package were not installed.
    result = run_python(
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from stellate.llm import create_adapter\n"
        f"try:\n    create_adapter({name!r}, model='m')\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    assert result.returncode == 0, result.stderr
    assert hint in result.stdout
