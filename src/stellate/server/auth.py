"""Who is calling: the space and rights of the request's ``Authorization: Bearer`` key.

Without a key ring (loopback dev mode) every request belongs to the default space with full rights. With
one, a request without a valid key gets 401; a read-only key may only read (403 ``read_only_key``).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from stellate.server.keys import KeyRing
from stellate.server.problems import ProblemError
from stellate.server.spaces import DEFAULT_SPACE

__all__ = ["Principal", "authenticate"]

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """The caller: which space it sees, and whether it may write."""

    space: str
    read_only: bool = False
    key_id: str | None = None


def authenticate(request: Request, keys: KeyRing | None) -> Principal:
    """The principal of ``request``.

    Raises:
        ProblemError: ``unauthorized`` (no or unknown key), ``read_only_key`` (a write with a read-only key).
    """
    if keys is None:
        return Principal(space=DEFAULT_SPACE)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProblemError("unauthorized", "this server needs an API key: send `Authorization: Bearer <key>`")
    found = keys.find(token.strip())
    if found is None:
        raise ProblemError("unauthorized", "the API key is unknown or revoked")
    if found.read_only and request.method not in _READ_METHODS:
        raise ProblemError("read_only_key", "this API key may only read")
    return Principal(space=found.space, read_only=found.read_only, key_id=found.id)
