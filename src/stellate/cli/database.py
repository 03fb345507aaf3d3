"""Opening the command's database, and the small state file that remembers the last chat session.

A database that does not exist yet is created (with the current schema) only by commands that write;
the others report ``store_not_found`` instead of leaving an empty file behind. An existing SQLite file
behind the current schema is never upgraded implicitly: an upgrade cannot be undone and an older
stellate sharing the file would stop working, so it waits for ``stellate db migrate``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stellate.errors import StoreError, UsageError
from stellate.store import BACKENDS, open_store
from stellate.store.sqlite_files import sqlite_path

if TYPE_CHECKING:
    from stellate.store import BaseStore

__all__ = ["Database", "open_database"]

_DEFAULT_LOCK_TIMEOUT = 5.0
_DEFAULT_BUSY_TIMEOUT = 30.0
_DEFAULT_LEASE_TTL = 30.0
_URL_EXAMPLES = {
    "postgresql": "postgresql://user@host:5432/db",
    "postgres": "postgres://user@host:5432/db",
    "sqlite": "sqlite:///path/to/file.db",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Database:
    """Where the command keeps sessions: a SQLite file (the default) or any store URL."""

    location: str
    """As given: a path, or a URL such as ``postgresql://...``."""
    lock_timeout: float = _DEFAULT_LOCK_TIMEOUT
    """Seconds to wait for another process's write lock before giving up with ``store_locked``."""
    busy_timeout: float = _DEFAULT_BUSY_TIMEOUT
    """Seconds to wait for another writer's turn on a session before giving up with ``session_busy``."""
    lease_ttl: float = _DEFAULT_LEASE_TTL
    """Seconds a session's lease lasts unless renewed: how long a dead writer's session stays blocked."""
    schema: str | None = None
    """PostgreSQL only: the schema of the tables (created if missing); None: the URL's ``search_path``."""

    @classmethod
    def from_env(cls, location: str, env: Mapping[str, str], *, schema: str | None = None) -> Database:
        """A database whose timeouts (seconds) come from the environment.

        ``$STELLATE_LOCK_TIMEOUT``, ``$STELLATE_BUSY_TIMEOUT`` and ``$STELLATE_LEASE_TTL``.
        """
        _check_location(location)
        return cls(
            location=location,
            schema=schema,
            lock_timeout=_seconds(env, "STELLATE_LOCK_TIMEOUT", _DEFAULT_LOCK_TIMEOUT),
            busy_timeout=_seconds(env, "STELLATE_BUSY_TIMEOUT", _DEFAULT_BUSY_TIMEOUT),
            lease_ttl=_seconds(env, "STELLATE_LEASE_TTL", _DEFAULT_LEASE_TTL, positive=True),
        )

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for other stores."""
        if "://" in self.location and not self.location.startswith("sqlite:"):
            return None
        return Path(sqlite_path(self.location))

    @property
    def url(self) -> str:
        """The store URL."""
        path = self.path
        return f"sqlite:///{path}" if path is not None else self.location

    def describe(self) -> str:
        """What ``stellate db path`` prints: the absolute file path, or the URL."""
        path = self.path
        return str(path.resolve()) if path is not None else self.location

    def exists(self) -> bool:
        """Whether the SQLite file holds anything yet (other stores always exist)."""
        path = self.path
        return path is None or (path.is_file() and path.stat().st_size > 0)

    def _digest(self) -> str:
        """Names this database's files in the user's dirs (per schema: two deployments keep their own keys)."""
        import hashlib  # OpenSSL's bindings: only for a database that is not a SQLite file

        named = self.location if self.schema is None else f"{self.location}#schema={self.schema}"
        return hashlib.sha256(named.encode()).hexdigest()[:16]

    @property
    def state_file(self) -> Path:
        """The state file: ``<db>.state.json`` beside a SQLite file, else one per URL in the user's state dir."""
        path = self.path
        if path is not None:
            return path.with_name(path.name + ".state.json")
        digest = self._digest()
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        return base / "stellate" / f"{digest}.json"

    @property
    def keys_file(self) -> Path:
        """The server's API keys: ``<db>.keys.json`` beside a SQLite file, else one per URL in the config dir."""
        path = self.path
        if path is not None:
            return path.with_name(path.name + ".keys.json")
        digest = self._digest()
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        return base / "stellate" / f"keys-{digest}.json"

    def last_session(self) -> str | None:
        """The session the last chat used, if remembered."""
        try:
            value = json.loads(self.state_file.read_text(encoding="utf-8")).get("last_session")
        except (OSError, ValueError, AttributeError):
            return None  # no state yet, or a damaged file: start afresh rather than fail
        return value if isinstance(value, str) else None

    def remember_session(self, session_id: str) -> None:
        """Record ``session_id`` as the one to resume (written atomically)."""
        target = self.state_file
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(json.dumps({"last_session": session_id}) + "\n", encoding="utf-8")
        temporary.replace(target)


@contextlib.asynccontextmanager
async def open_database(database: Database, *, create: bool = False, migrate: bool = False) -> AsyncIterator[BaseStore]:
    """Open the store, and close it afterwards.

    Args:
        database: Which store.
        create: Create the SQLite file when it does not exist (else ``store_not_found``).
        migrate: Bring an existing file's schema up to date (``stellate db migrate``).

    Raises:
        StoreError: ``store_not_found``, ``schema_behind``, ``store_locked`` (as ``ConflictError``).
        UsageError: ``missing_extra`` when the URL's backend needs an extra that is not installed.
        SchemaError: the file comes from a newer stellate.
    """
    store = await _open(database, create=create, migrate=migrate)
    try:
        yield store
    finally:
        await store.close()


async def _open(database: Database, *, create: bool, migrate: bool) -> BaseStore:
    if database.schema is not None and not database.url.startswith(("postgresql:", "postgres:")):
        raise UsageError(f"a schema ({database.schema!r}) is for a PostgreSQL store, not {database.describe()}")
    if database.path is None:
        try:
            if database.schema is not None:
                from stellate.store.postgres import PostgresStore

                return await PostgresStore.open(database.url, schema=database.schema)
            return await open_store(database.url)
        except ImportError as exc:  # the backend's extra (psycopg for postgresql://) is not installed
            raise UsageError(str(exc), code="missing_extra") from exc
        except StoreError as exc:
            await _check_database_exists(database, exc)
            raise
    is_new = not database.exists()
    if is_new and not create:
        raise StoreError(
            f"no database at {database.describe()}; `stellate demo` or `stellate chat` creates one",
            code="store_not_found",
        )
    from stellate.store.sqlite import SqliteStore  # the store's machinery: not for a `Database` alone

    timeout_ms = int(database.lock_timeout * 1000)
    return await SqliteStore.open(database.url, migrate=migrate or is_new, busy_timeout_ms=timeout_ms)


async def _check_database_exists(database: Database, failure: StoreError) -> None:
    """Say that a PostgreSQL database is missing, as for a SQLite file, when that is why the store did not open.

    Raises:
        StoreError: ``store_not_found`` when the server answers that it has no such database.
    """
    if failure.code not in ("store_error", "store_unavailable") or not database.location.startswith(
        ("postgresql:", "postgres:")
    ):
        return
    from stellate.store.pg_database import database_name, has_database

    if await has_database(database.url) is False:
        raise StoreError(
            f'no database "{database_name(database.url)}" at {database.describe()}; `stellate db migrate` creates it',
            code="store_not_found",
        ) from failure


def _check_location(location: str) -> None:
    """Refuse a store URL missing its ``//`` (``postgresql:/db``), which would otherwise name a SQLite file."""
    scheme, colon, rest = location.partition(":")
    if colon and scheme.lower() in BACKENDS and not rest.startswith("//"):
        example = _URL_EXAMPLES.get(scheme.lower(), f"{scheme}://...")
        raise UsageError(f"{location!r} is not a store URL, which starts with {scheme}:// (e.g. {example})")


def _seconds(env: Mapping[str, str], name: str, default: float, *, positive: bool = False) -> float:
    raw = env.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError as exc:
        raise UsageError(f"{name} must be seconds, not {raw!r}", code="config_invalid") from exc
    if value < 0 or (positive and value == 0):
        bound = "more than 0" if positive else "0 or more"
        raise UsageError(f"{name} must be {bound} seconds, not {raw!r}", code="config_invalid")
    return value
