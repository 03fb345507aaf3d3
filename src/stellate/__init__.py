"""stellate: branching LLM conversations as a forest of sessions on an append-only event log."""

from stellate._version import __version__
from stellate.agent import Agent, Reflector, SessionDigest, TopologyNode
from stellate.engine import (
    ForkOptions,
    ForkProfile,
    SessionConfig,
    SplitGuard,
    ToolContext,
    ToolResult,
    load_skills,
    tool,
)
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

__all__ = [
    "Agent",
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
