"""Where session logs live: the `Store` protocol and its backends (memory, SQLite, PostgreSQL).

Open a store by URL with `open_store`; backends are imported on demand, so PostgreSQL's driver is
needed only when you use it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from stellate.errors import UsageError
from stellate.store.types import (
    Anchor,
    Boundary,
    CompletedTurn,
    ForkPoint,
    ForkRequest,
    SessionId,
    SessionRecord,
)

if TYPE_CHECKING:
    from stellate.store.base import BaseStore, new_session_id
    from stellate.store.jsonl import export_session, import_session
    from stellate.store.protocol import Store

# The store's machinery (asyncio, leases, signals) is imported on first use (PEP 562): a command that only reads
# the listing (``stellate sessions list``) starts without it (issue 22).
_LAZY = {
    "BaseStore": "stellate.store.base",
    "new_session_id": "stellate.store.base",
    "export_session": "stellate.store.jsonl",
    "import_session": "stellate.store.jsonl",
    "Store": "stellate.store.protocol",
}

__all__ = [
    "Anchor",
    "BaseStore",
    "Boundary",
    "CompletedTurn",
    "ForkPoint",
    "ForkRequest",
    "SessionId",
    "SessionRecord",
    "Store",
    "export_session",
    "import_session",
    "new_session_id",
    "open_store",
]

#: URL scheme -> "module:class"; each class has an async ``open(url)`` classmethod.
BACKENDS: dict[str, str] = {
    "memory": "stellate.store.memory:MemoryStore",
    "sqlite": "stellate.store.sqlite:SqliteStore",
    "postgresql": "stellate.store.postgres:PostgresStore",
    "postgres": "stellate.store.postgres:PostgresStore",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


async def open_store(url: str) -> BaseStore:
    """Open the store at ``url``: ``memory://``, ``sqlite:///path/to/file.db`` or ``postgresql://...``.

    Raises:
        UsageError: the scheme is unknown.
        ImportError: the backend's extra is not installed (the message names the ``pip install``).
    """
    scheme = url.split("://", 1)[0] if "://" in url else "sqlite"
    target = BACKENDS.get(scheme)
    if target is None:
        raise UsageError(f"unknown store URL scheme {scheme!r}; use one of {', '.join(sorted(BACKENDS))}")
    module_name, class_name = target.split(":")
    backend = getattr(importlib.import_module(module_name), class_name)
    store: BaseStore = await backend.open(url)
    return store
