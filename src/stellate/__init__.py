"""stellate: branching LLM conversations as a forest of sessions on an append-only event log."""

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

__all__ = [
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
