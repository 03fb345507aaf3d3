"""Whether a lease's holder still lives: its process, named in the lease token by host, pid and start time.

A lease whose holder crashed would otherwise block its session until the lease lapses (its ttl, 30 s by
default). The token a process puts on a lease carries a stamp of that process: host name, pid namespace, pid
and the kernel's start time of the pid. A writer on the same host (and in the same pid namespace) that finds the
lease can then tell that its holder is gone — no such pid, a pid now reused by a process started at another
time, or a zombie — and break the lease at once. Anything it cannot judge (another host, another namespace, a
system without ``/proc``, a token without a stamp) counts as alive: the ttl decides, as before.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from pathlib import Path

__all__ = ["holder_is_gone", "new_lease_token", "process_stamp"]

_PROC = Path("/proc")


def new_lease_token() -> str:
    """A fresh lease token: random, then this process's stamp when it has one (``uuid.stamp``)."""
    stamp = process_stamp()
    return f"{uuid.uuid4().hex}.{stamp}" if stamp else uuid.uuid4().hex


def process_stamp() -> str | None:
    """``host/pidns/pid/start`` of the running process; None where it cannot be read (no ``/proc``)."""
    return _stamp_of(os.getpid())


@functools.cache
def _stamp_of(pid: int) -> str | None:
    # Keyed by pid: a forked child computes its own stamp, never its parent's.
    start = _start_time(pid)
    namespace = _pid_namespace()
    if start is None or namespace is None:
        return None
    return f"{socket.gethostname()}/{namespace}/{pid}/{start}"


def holder_is_gone(token: str) -> bool:
    """Whether the process that put ``token`` on a lease is known to have ended.

    True only when the stamp names this host and pid namespace and that pid is absent, a zombie, or a process
    started at another time (the pid was reused). False whenever that cannot be told.
    """
    _, dot, stamp = token.partition(".")
    parts = stamp.split("/") if dot else []
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, namespace, pid, start = parts
    if host != socket.gethostname() or namespace != _pid_namespace() or process_stamp() is None:
        return False
    try:
        os.kill(int(pid), 0)  # signal 0 only asks whether the pid exists
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        pass  # it exists (another user's process), or the pid is not one: read what /proc tells
    stat = _read_stat(int(pid))
    if stat is None:
        return False  # hidden from this user (e.g. /proc mounted with hidepid): it may well be alive
    state, started = stat
    return state in ("Z", "X") or started != start


def _pid_namespace() -> str | None:
    try:
        return os.readlink(_PROC / "self" / "ns" / "pid").removeprefix("pid:").strip("[]")
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    stat = _read_stat(pid)
    return stat[1] if stat is not None else None


def _read_stat(pid: int) -> tuple[str, str] | None:
    """The state letter and start time (clock ticks after boot) of ``pid``; None when there is no such process."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it start past the last ")".
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]
