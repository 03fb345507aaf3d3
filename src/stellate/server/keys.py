"""API keys: a small JSON file of hashed keys, each bound to one space and optionally read-only.

A key is shown once, when it is created; the file keeps only its SHA-256 (keys are 256 random bits, so a
fast hash is enough: there is nothing to guess). The server re-reads the file when it changes, so a key
created or revoked with ``stellate keys`` takes effect without a restart.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from stellate.errors import UsageError

__all__ = ["KEY_PREFIX", "ApiKey", "KeyRing", "hash_key"]

KEY_PREFIX = "stl_"
SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def hash_key(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKey:
    """One key as stored (never the key itself)."""

    id: str
    """Public handle, shown by ``keys list`` and used by ``keys revoke``."""
    space: str
    hash: str
    read_only: bool = False
    created_at: int = 0
    """Epoch milliseconds."""
    revoked_at: int | None = None

    @property
    def active(self) -> bool:
        """Not revoked."""
        return self.revoked_at is None


class KeyRing:
    """The keys of one file; reads are cached until the file changes.

    Args:
        path: The JSON file (created by the first `create`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: list[ApiKey] = []

    def keys(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first."""
        self._reload()
        return list(self._keys)

    def has_active_keys(self) -> bool:
        """Whether any key can authenticate."""
        return any(k.active for k in self.keys())

    def find(self, key: str) -> ApiKey | None:
        """The active key matching ``key``, or None."""
        digest = hash_key(key)
        found = next((k for k in self.keys() if secrets.compare_digest(k.hash, digest)), None)
        return found if found is not None and found.active else None

    def create(self, space: str, *, read_only: bool = False) -> tuple[ApiKey, str]:
        """Add a key for ``space``; returns it and the secret (shown once, never stored).

        Raises:
            UsageError: ``usage_error`` for a space name that is not 1-64 letters, digits, ``_.-``.
        """
        if not SPACE_NAME.match(space):
            raise UsageError(f"space names are 1-64 letters, digits, '_', '.' or '-', not {space!r}")
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        entry = ApiKey(
            id="k-" + secrets.token_hex(4),
            space=space,
            hash=hash_key(secret),
            read_only=read_only,
            created_at=int(time.time() * 1000),
        )
        self._write([*self.keys(), entry])
        return entry, secret

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (revoking twice is harmless).

        Raises:
            UsageError: ``key_not_found`` when no key has this id.
        """
        keys = self.keys()
        target = next((k for k in keys if k.id == key_id), None)
        if target is None:
            raise UsageError(f"no API key {key_id!r}; `stellate keys list` shows them", code="key_not_found")
        if target.active:
            target = replace(target, revoked_at=int(time.time() * 1000))
            self._write([target if k.id == key_id else k for k in keys])
        return target

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._keys = None, []
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._keys = [ApiKey(**item) for item in data["keys"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"the key file {self.path} is damaged: {exc}", code="config_invalid") from exc
        self._stamp = stamp

    def _write(self, keys: list[ApiKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        text = json.dumps({"keys": [asdict(k) for k in keys]}, indent=1) + "\n"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        temporary.replace(self.path)
        self._stamp = None
