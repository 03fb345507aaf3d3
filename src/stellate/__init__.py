"""stellate: branching LLM conversations as a forest of sessions on an append-only event log."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from stellate._version import __version__
from stellate.errors import (
    ArchivedError,
    ConflictError,
    ForkError,
    FormatError,
    InvariantError,
    LLMError,
    NotFoundError,
    ProviderError,
    SchemaError,
    StellateError,
    StoreError,
    UsageError,
)

if TYPE_CHECKING:
    from stellate.agent import Agent, Reflector, SessionDigest, TopologyNode
    from stellate.engine import (
        Approval,
        ForkOptions,
        ForkProfile,
        SessionConfig,
        SplitGuard,
        ToolContext,
        ToolResult,
        load_skills,
        tool,
    )

#: The facade's names that import the agent and engine layers, loaded on first use: importing any submodule
#: (``stellate.store.sqlite``, the CLI) runs this module, and those layers cost a fresh process ~0.3 s (issue 22).
_LAZY = {
    "Agent": "stellate.agent",
    "Approval": "stellate.engine",
    "Reflector": "stellate.agent",
    "SessionDigest": "stellate.agent",
    "TopologyNode": "stellate.agent",
    "ForkOptions": "stellate.engine",
    "ForkProfile": "stellate.engine",
    "SessionConfig": "stellate.engine",
    "SplitGuard": "stellate.engine",
    "ToolContext": "stellate.engine",
    "ToolResult": "stellate.engine",
    "load_skills": "stellate.engine",
    "tool": "stellate.engine",
}


def __getattr__(name: str) -> Any:
    """The facade's agent and engine names, imported when first asked for (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stellate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Agent",
    "Approval",
    "ForkOptions",
    "ForkProfile",
    "Reflector",
    "SessionConfig",
    "SessionDigest",
    "SplitGuard",
    "ToolContext",
    "ToolResult",
    "TopologyNode",
    "load_skills",
    "tool",
    "ArchivedError",
    "ConflictError",
    "ForkError",
    "FormatError",
    "InvariantError",
    "LLMError",
    "NotFoundError",
    "ProviderError",
    "SchemaError",
    "StellateError",
    "StoreError",
    "UsageError",
    "__version__",
]
