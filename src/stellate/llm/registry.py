"""Adapters by name, imported on demand.

A name maps to an import path (``"stellate.llm.openai:OpenAIAdapter"``) or to a factory. Resolving a name imports
its module only then, so ``import stellate`` never needs an extra, and a session can record the adapter name it
was created with and get the same adapter back after a restart (DESIGN.md §4).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, cast

from stellate.errors import UsageError
from stellate.llm.types import LLMAdapter

__all__ = [
    "BUILTIN_ADAPTERS",
    "AdapterFactory",
    "AdapterRegistry",
    "create_adapter",
    "default_registry",
    "register_adapter",
    "resolve_adapter",
]

AdapterFactory: TypeAlias = Callable[..., LLMAdapter]
"""Builds an adapter from keyword options (an adapter class is one)."""

#: The adapters stellate ships, as ``module:attribute`` import paths.
BUILTIN_ADAPTERS: Mapping[str, str] = {
    "openai": "stellate.llm.openai:OpenAIAdapter",
    "anthropic": "stellate.llm.anthropic:AnthropicAdapter",
    "local": "stellate.llm.local:LlamaCppAdapter",
    "scripted": "stellate.llm.scripted:ScriptedLLM",
    "function": "stellate.llm.scripted:FunctionLLM",
}


def _import_path(name: str, path: str) -> AdapterFactory:
    module_name, _, attribute = path.partition(":")
    module = importlib.import_module(module_name)  # an ImportError here carries the extra's install hint
    try:
        factory = getattr(module, attribute)
    except AttributeError as exc:
        raise UsageError(f"adapter {name!r}: {module_name} has no attribute {attribute!r}", adapter=name) from exc
    return cast(AdapterFactory, factory)


class AdapterRegistry:
    """Names mapped to adapter factories, given directly or as import paths resolved on first use.

    Args:
        entries: Initial names; `BUILTIN_ADAPTERS` when omitted.
    """

    def __init__(self, entries: Mapping[str, str | AdapterFactory] | None = None) -> None:
        self._entries: dict[str, str | AdapterFactory] = dict(BUILTIN_ADAPTERS if entries is None else entries)

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def register(self, name: str, factory: str | AdapterFactory, *, replace: bool = False) -> None:
        """Register ``factory`` (or a ``"module:attribute"`` path) under ``name``.

        Raises:
            UsageError: ``name`` is taken and ``replace`` is false, or a path lacks its ``:``.
        """
        if name in self._entries and not replace:
            raise UsageError(f"adapter {name!r} is already registered; pass replace=True to override", adapter=name)
        if isinstance(factory, str) and ":" not in factory:
            raise UsageError(f"adapter path must look like 'module:attribute', got {factory!r}", adapter=name)
        self._entries[name] = factory

    def resolve(self, name: str) -> AdapterFactory:
        """The factory registered under ``name``, importing its module if needed.

        Raises:
            UsageError: No adapter has this name.
            ImportError: The adapter's optional extra is not installed (the message names it).
        """
        entry = self._entries.get(name)
        if entry is None:
            known = ", ".join(self.names())
            raise UsageError(f"no LLM adapter named {name!r}; known: {known}", adapter=name)
        if isinstance(entry, str):
            entry = _import_path(name, entry)
            self._entries[name] = entry
        return entry

    def create(self, name: str, /, **options: Any) -> LLMAdapter:
        """Build the adapter registered under ``name`` with ``options``."""
        return self.resolve(name)(**options)


default_registry = AdapterRegistry()
"""The process-wide registry that `register_adapter`, `resolve_adapter` and `create_adapter` use."""


def register_adapter(name: str, factory: str | AdapterFactory, *, replace: bool = False) -> None:
    """Register an adapter factory (or ``"module:attribute"`` path) in the default registry.

    Raises:
        UsageError: ``name`` is taken and ``replace`` is false.
    """
    default_registry.register(name, factory, replace=replace)


def resolve_adapter(name: str) -> AdapterFactory:
    """The factory registered under ``name`` in the default registry."""
    return default_registry.resolve(name)


def create_adapter(name: str, /, **options: Any) -> LLMAdapter:
    """Build the adapter registered under ``name`` in the default registry.

    Example:
        ``create_adapter("openai", model="gpt-4o-mini", max_context_tokens=128_000)``
    """
    return default_registry.create(name, **options)
