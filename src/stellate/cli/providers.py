"""Model providers the command knows by name, and how an adapter is built from resolved settings.

A provider is a row of `PROVIDERS` (which adapter, which key variable, default model and host), never an
if/elif chain; the adapter itself comes from the library's registry (`stellate.llm.create_adapter`), so
an extra that is missing is reported with its ``pip install``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stellate.errors import ProviderError, UsageError
from stellate.llm import (
    LLMAdapter,
    LLMRequest,
    LLMResponse,
    Reply,
    RetryNotice,
    RetryPolicy,
    ScriptStep,
    StreamEvent,
    create_adapter,
    tool_call,
)

__all__ = [
    "PROVIDERS",
    "ProviderSettings",
    "ProviderSpec",
    "UnconfiguredLLM",
    "adapter_or_placeholder",
    "build_adapter",
    "describe_provider",
    "load_script",
    "not_configured",
    "public_providers",
    "served_model",
    "served_models",
]

_DISCOVERY_TIMEOUT = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSpec:
    """What the command knows about one provider."""

    adapter: str
    """Name of the adapter in `stellate.llm.default_registry`."""
    key_env: str | None = None
    """The provider's usual API-key variable."""
    default_model: str | None = None
    base_url: str | None = None
    """The provider's own API root; a key is required only there (a custom URL may be a local server)."""
    context_tokens: int | None = None
    hidden: bool = False
    """Left out of help texts (the scripted provider exists for tests)."""


PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec(
        adapter="openai",
        key_env="OPENAI_API_KEY",
        default_model="gpt-4o-mini",
        base_url="https://api.openai.com/v1",
        context_tokens=128_000,
    ),
    "deepseek": ProviderSpec(
        adapter="openai",
        key_env="DEEPSEEK_API_KEY",
        default_model="deepseek-chat",
        base_url="https://api.deepseek.com/v1",
        context_tokens=64_000,
    ),
    "anthropic": ProviderSpec(
        adapter="anthropic",
        key_env="ANTHROPIC_API_KEY",
        default_model="claude-sonnet-4-20250514",
        base_url="https://api.anthropic.com",
        context_tokens=200_000,
    ),
    "local": ProviderSpec(adapter="local", context_tokens=2048),
    "scripted": ProviderSpec(adapter="scripted", hidden=True),
}


def public_providers() -> list[str]:
    """Provider names to show people."""
    return [name for name, spec in PROVIDERS.items() if not spec.hidden]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderSettings:
    """A provider choice after flags, environment and config file are merged (see `stellate.cli.settings`)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    context_tokens: int | None = None
    script: str | None = None
    """For the hidden ``scripted`` provider: a JSON file of replies (``STELLATE_SCRIPT``)."""


def not_configured() -> UsageError:
    """The error `chat` stops with when no provider is set: it says exactly what to set."""
    names = ", ".join(public_providers())
    return UsageError(
        f"no model provider is configured: set STELLATE_PROVIDER ({names}) and its API key "
        '(e.g. OPENAI_API_KEY), pass --provider, or put provider = "..." in the config file',
        code="provider_not_configured",
    )


def build_adapter(settings: ProviderSettings, *, on_retry: Callable[[RetryNotice], None] | None = None) -> LLMAdapter:
    """The adapter ``settings`` describe; ``on_retry`` is told of each retry of a hosted provider's call.

    Raises:
        UsageError: ``provider_not_configured`` (no provider, or a hosted one without its key),
            ``config_invalid`` (unknown provider, bad script file), ``missing_extra`` (extra not installed).
    """
    if settings.provider is None:
        raise not_configured()
    spec = PROVIDERS.get(settings.provider)
    if spec is None:
        raise UsageError(
            f"unknown provider {settings.provider!r}; choose one of {', '.join(public_providers())}",
            code="config_invalid",
        )
    options = _OPTION_BUILDERS[spec.adapter](settings.provider, spec, settings)
    if on_retry is not None and spec.adapter in _RETRYING:
        options["retry"] = RetryPolicy(on_retry=on_retry)
    try:
        return create_adapter(spec.adapter, **options)
    except ImportError as exc:
        raise UsageError(str(exc), code="missing_extra") from exc


_RETRYING = frozenset({"openai", "anthropic"})


def served_models(settings: ProviderSettings) -> list[str]:
    """The models an OpenAI-compatible server at a custom ``base_url`` lists (``GET /models``), when none was chosen.

    vLLM, llama.cpp's server and Ollama list what they serve; a server that lists nothing (or cannot be
    reached yet) gives ``[]``, and the provider's default name is used as before.
    """
    spec = PROVIDERS.get(settings.provider or "")
    if spec is None or spec.adapter != "openai" or settings.model is not None:
        return []
    if settings.base_url is None or settings.base_url == spec.base_url:
        return []
    try:
        import httpx  # the cli extra has it; without it the openai adapter could not run either
    except ImportError:
        return []
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    try:
        answer = httpx.get(settings.base_url.rstrip("/") + "/models", headers=headers, timeout=_DISCOVERY_TIMEOUT)
        listed = answer.raise_for_status().json()["data"]
        return [str(item["id"]) for item in listed if isinstance(item, dict) and item.get("id")]
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return []  # not listed: the default name stays, and the banner says it is one


def served_model(settings: ProviderSettings) -> tuple[ProviderSettings, list[str]]:
    """The settings with the model a server at a custom address serves, and what it lists (``chat`` and ``serve``).

    A server that lists exactly one model is talked to by that model's name; with several (or none listed) the
    settings are left as they are and the caller says which name is a default.
    """
    offered = served_models(settings)
    if len(offered) == 1:
        settings = dataclasses.replace(settings, model=offered[0])
    return settings, offered


def describe_provider(settings: ProviderSettings, llm: LLMAdapter, *, offered: Sequence[str] = ()) -> str:
    """What the chat's banner says about the model: provider, model and, when it is not the provider's own, host.

    A model name that nobody chose (the provider's default) is marked as such, because a server at another
    address may serve a different model under any name; ``offered`` are the models that server lists.
    """
    spec = PROVIDERS.get(settings.provider or "")
    model = llm.model
    if spec is not None and settings.model is None and spec.default_model == model:
        choice = f"the server lists {', '.join(offered)}; --model picks one" if offered else "--model sets it"
        model = f"{model} (default name; {choice})"
    parts = [llm.provider, model]
    if settings.base_url is not None and (spec is None or settings.base_url != spec.base_url):
        parts.append(f"at {settings.base_url}")
    return " · ".join(parts)


def _hosted_options(name: str, spec: ProviderSpec, settings: ProviderSettings) -> dict[str, Any]:
    base_url = settings.base_url or spec.base_url
    if settings.api_key is None and base_url == spec.base_url:
        raise UsageError(
            f"provider {name!r} needs an API key: set {spec.key_env} (or STELLATE_API_KEY)",
            code="provider_not_configured",
        )
    return {
        "model": settings.model or spec.default_model,
        "base_url": base_url,
        "api_key": settings.api_key,
        "max_context_tokens": settings.context_tokens or spec.context_tokens,
        "provider": name,
    }


def _local_options(name: str, spec: ProviderSpec, settings: ProviderSettings) -> dict[str, Any]:
    options: dict[str, Any] = {"n_ctx": settings.context_tokens or spec.context_tokens}
    if settings.model:
        options["model_path"] = settings.model  # a GGUF file; the bundled SmolLM2 otherwise
    return options


def _scripted_options(name: str, spec: ProviderSpec, settings: ProviderSettings) -> dict[str, Any]:
    script = load_script(Path(settings.script)) if settings.script else []
    return {"script": script, "default": _echo, "model": settings.model or "scripted-model"}


_OPTION_BUILDERS: dict[str, Callable[[str, ProviderSpec, ProviderSettings], dict[str, Any]]] = {
    "openai": _hosted_options,
    "anthropic": _hosted_options,
    "local": _local_options,
    "scripted": _scripted_options,
}


def _echo(request: LLMRequest) -> str:
    last = request.messages[-1].content if request.messages else ""
    return f"(scripted) you said: {last}"


def load_script(path: Path) -> list[ScriptStep]:
    """Replies for the scripted provider from a JSON list.

    Each item is a reply text, or an object with ``text``, ``tool_calls`` (``[{"name", "arguments"}]``)
    or ``error`` (raised as a `ProviderError`). Once the list is used up, the model echoes the user.

    Raises:
        UsageError: ``config_invalid`` when the file cannot be read or is not such a list.
    """
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the script {path}: {exc}", code="config_invalid") from exc
    if not isinstance(items, list):
        raise UsageError(f"the script {path} must be a JSON list of replies", code="config_invalid")
    return [_script_step(item, path) for item in items]


def _script_step(item: object, path: Path) -> ScriptStep:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise UsageError(f"the script {path} has a reply that is neither text nor an object", code="config_invalid")
    if "error" in item:
        return ProviderError(str(item["error"]), provider="scripted")
    calls = [tool_call(str(c["name"]), c.get("arguments") or {}) for c in item.get("tool_calls", [])]
    return Reply(text=str(item.get("text", "")), tool_calls=calls)


class UnconfiguredLLM:
    """Stands in for the model in commands that do not call one (tree, fork...); any call raises ``problem``."""

    def __init__(self, problem: UsageError) -> None:
        self._problem = problem

    @property
    def provider(self) -> str:
        """No provider."""
        return "none"

    @property
    def model(self) -> str:
        """No model."""
        return "none"

    @property
    def max_context_tokens(self) -> int:
        """A nominal window (nothing is ever sent)."""
        return 8192

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Raise the configuration problem."""
        raise self._problem

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Raise the configuration problem."""
        raise self._problem
        yield  # pragma: no cover - makes this an async generator


def adapter_or_placeholder(settings: ProviderSettings) -> tuple[LLMAdapter, bool]:
    """The configured adapter and True, or an `UnconfiguredLLM` and False when no provider is configured."""
    try:
        return build_adapter(settings), True
    except UsageError as exc:
        if exc.code != "provider_not_configured":
            raise
        return UnconfiguredLLM(exc), False
