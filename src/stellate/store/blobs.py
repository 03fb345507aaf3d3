"""Blobs: large content (images) stored once per space under its sha256, beside the logs that refer to it.

Events never hold the bytes, only a reference (``{"sha256": ...}`` in an ``images`` list), so a fork that
inherits a prefix by reference inherits its images with it. `BlobStore` is the optional ability every backend
implements; ``delete_unreferenced_blobs`` frees what no event of the space refers to any more (session erase
calls it). A writer puts a blob again right before it writes an event that refers to it: a put refreshes the
blob's age, and a blob younger than the grace period is never deleted, so a sweep running meanwhile cannot take it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, runtime_checkable

from stellate.errors import NotFoundError

__all__ = [
    "BLOB_GRACE_MS",
    "IMAGE_EVENT_TYPES",
    "Blob",
    "BlobStore",
    "blob_hash",
    "blob_not_found",
    "referenced_hashes",
]

BLOB_GRACE_MS: Final = 3600 * 1000
"""A blob put less than this long ago (epoch ms) survives a sweep, referenced or not: it is about to be.

A sweep with ``grace_ms=0`` takes every unreferenced blob, one put this very millisecond too."""
IMAGE_EVENT_TYPES: Final = ("user/message", "tool/result")
"""Event types whose ``data`` may hold an ``images`` list of references."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Blob:
    """Stored bytes and what they are."""

    sha256: str
    media_type: str
    data: bytes = field(repr=False)
    created_at: int
    """Epoch ms of the latest put."""


@runtime_checkable
class BlobStore(Protocol):
    """A store that keeps blobs for the sessions of its space."""

    async def put_blob(self, data: bytes, *, media_type: str) -> str:
        """Store ``data`` (once: putting the same bytes again only refreshes its age); returns its sha256."""
        ...

    async def get_blob(self, sha256: str) -> Blob:
        """The blob; raises `NotFoundError` (code ``blob_not_found``) when this space has none under that hash."""
        ...

    async def has_blobs(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` this space holds."""
        ...

    async def delete_unreferenced_blobs(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """Delete the blobs no event of the space refers to and older than ``grace_ms``; returns their hashes."""
        ...


def blob_hash(data: bytes) -> str:
    """The content address of ``data``: its hex sha256."""
    return hashlib.sha256(data).hexdigest()


def blob_not_found(sha256: str) -> NotFoundError:
    """The error of a hash the space holds no blob for."""
    return NotFoundError(f"no blob {sha256!r} in this space; upload it again", code="blob_not_found", sha256=sha256)


def referenced_hashes(data: Iterable[object]) -> set[str]:
    """The hashes the ``images`` lists of event data refer to (each item a dict or its JSON text)."""
    found: set[str] = set()
    for item in data:
        value = json.loads(item) if isinstance(item, str) else item
        images = value.get("images") if isinstance(value, dict) else None
        for image in images if isinstance(images, list) else ():
            if isinstance(image, dict) and isinstance(image.get("sha256"), str):
                found.add(image["sha256"])
    return found
