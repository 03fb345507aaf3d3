"""The socket ``stellate serve`` listens on: bound before anything is printed, each failure one typed error.

Binding first means the banner is printed only once the address is the server's, and a taken port, a bad
address or a refused bind is one line with its own exit status instead of a traceback after the banner.
"""

from __future__ import annotations

import errno
import socket

from stellate.errors import UsageError

__all__ = ["BACKLOG", "bind_listener"]

BACKLOG = 2048
"""Connections the kernel queues before the server accepts them (uvicorn's default)."""


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any free port).

    Raises:
        UsageError: ``invalid_address`` (no such port, a host that does not resolve or is not one of this
            machine), ``port_in_use``, ``bind_refused`` (e.g. a port below 1024 without the privilege).
    """
    if not 0 <= port <= 65535:
        raise UsageError(f"port {port} is not a TCP port (0-65535)", code="invalid_address", port=port)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        # As uvicorn does: a restarted server may bind while the old one's connections are in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise _bind_error(exc, host, port) from exc
    return sock


def _bind_error(exc: OSError, host: str, port: int) -> UsageError:
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    if isinstance(exc, socket.gaierror):
        return UsageError(f"cannot listen on {where}: {host!r} is not a known host", code="invalid_address", host=host)
    if exc.errno == errno.EADDRINUSE:
        return UsageError(
            f"cannot listen on {where}: another process already listens there; stop it or pick another --port",
            code="port_in_use",
            port=port,
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(f"cannot listen on {where}: not an address of this machine", code="invalid_address")
    reason = exc.strerror or str(exc)
    return UsageError(f"cannot listen on {where}: {reason}", code="bind_refused", host=host, port=port)
