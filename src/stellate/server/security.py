"""What keeps web pages from driving the server: the ``Host`` it answers to, and who may change state.

A browser lets any page send requests to any address, ``127.0.0.1`` included, and DNS rebinding lets a page
read the answers by pointing its own name at the server. Three checks, before any route runs:

- ``Host`` must be one the server serves (421 ``host_not_allowed``). Without API keys (dev mode) only loopback
  names are served, so a rebound name (``Host: attacker.example``) is refused. With keys any host is served
  unless a list is configured: a page cannot read the key a request needs.
- A state-changing request (any method but GET, HEAD, OPTIONS) must come from no browser page (no ``Origin``),
  from the server's own origin (the devtools UI), or from a configured origin (403 ``origin_not_allowed``).
- It must carry JSON, or no body at all (415 ``unsupported_media_type``): the form types a page can post
  without asking (``application/x-www-form-urlencoded``, ``multipart/form-data``, ``text/plain``) never pass.

See https://fetch.spec.whatwg.org/#cors-safelisted-request-header for the content types a page may send
cross-origin without a preflight.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from stellate.server.problems import problem_response

__all__ = ["ANY", "BrowserGuard", "HostPolicy", "is_loopback_name", "split_host"]

ANY = "*"
"""In an allow list: every value."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host(value: str) -> tuple[str, int | None]:
    """``Host``'s name (lowercase, without a final dot or IPv6 brackets) and port.

    ``[::1]:8700`` → ``("::1", 8700)``; ``Example.COM.`` → ``("example.com", None)``; a bad port → ``None``.
    """
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        name, port_text = value, ""
    port = int(port_text) if port_text.isdigit() else None
    return name.rstrip("."), port


def is_loopback_name(name: str) -> bool:
    """Whether a host name can only mean this machine: ``localhost``, 127.0.0.0/8, ``::1``."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class HostPolicy:
    """The hosts and cross-origin callers the server accepts."""

    hosts: tuple[str, ...]
    """Host names served besides loopback ones (always served): ``example.com``, ``*.example.com``, or ``*``."""
    origins: tuple[str, ...] = ()
    """Origins besides the server's own that may change state (``https://app.example.com``), or ``*``."""

    @classmethod
    def of(cls, hosts: Iterable[str] | None, origins: Iterable[str] = (), *, with_keys: bool) -> HostPolicy:
        """The policy; ``hosts`` None means loopback only without keys, any host with them."""
        if hosts is None:
            hosts = (ANY,) if with_keys else ()
        return cls(
            hosts=tuple(h.strip().lower().rstrip(".") for h in hosts),
            origins=tuple(o.strip().lower().rstrip("/") for o in origins),
        )

    def allows_host(self, name: str) -> bool:
        """Whether requests naming host ``name`` are served."""
        if is_loopback_name(name) or ANY in self.hosts:
            return True
        return any(name == h or (h.startswith("*.") and name.endswith(h[1:])) for h in self.hosts)

    def allows_origin(self, origin: str, host: str) -> bool:
        """Whether a page of ``origin`` may change state on a request whose ``Host`` is ``host``."""
        origin = origin.strip().lower()
        if ANY in self.origins or origin in self.origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False  # "null" (a sandboxed frame, a file) and anything that is no origin
        try:
            origin_port = parts.port or _DEFAULT_PORTS[parts.scheme]
        except ValueError:
            return False
        name, port = split_host(host)
        # A proxy that ends TLS may forward neither the scheme nor the port: the Origin's scheme says which.
        host_port = port or _DEFAULT_PORTS[parts.scheme]
        return parts.hostname.rstrip(".") == name and origin_port == host_port


class BrowserGuard:
    """ASGI middleware answering a problem, before any route runs, to what a web page must not do."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse the request, or pass it on untouched."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        code, detail, status = refusal
        await problem_response(code, detail, status)(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[str, str, int] | None:
        headers = _headers(scope)
        host = headers.get("host", "")
        name, _ = split_host(host)
        if not self.policy.allows_host(name):
            shown = host or "(none)"
            return "host_not_allowed", f"this server does not serve host {shown!r}; see allowed hosts", 421
        method = scope.get("method", "GET")
        if scope["type"] == "http" and method in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and not self.policy.allows_origin(origin, host):
            return "origin_not_allowed", f"requests from pages of {origin!r} may not change state here", 403
        if scope["type"] == "http" and not _is_json_or_empty(headers):
            kind = headers.get("content-type", "(none)")
            return "unsupported_media_type", f"send JSON (Content-Type: application/json), not {kind}", 415
        return None


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lowercase name (the last of repeated ones)."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in scope.get("headers") or ()}


def _is_json_or_empty(headers: dict[str, str]) -> bool:
    """JSON (``application/json``, ``application/*+json``), or no content type and no body."""
    content_type = headers.get("content-type")
    if content_type is None:
        return headers.get("content-length", "0").strip() == "0" and "transfer-encoding" not in headers
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
