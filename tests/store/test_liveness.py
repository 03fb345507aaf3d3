"""Telling a dead lease holder from a live one by the stamp in its lease token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from stellate.store.liveness import holder_is_gone, new_lease_token, process_stamp

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def stamp_with(*, host: str | None = None, pid: int | None = None, start: str | None = None) -> str:
    own = process_stamp()
    assert own is not None
    own_host, namespace, own_pid, own_start = own.split("/")
    parts = [host or own_host, namespace, str(pid or own_pid), start or own_start]
    return "0" * 32 + "." + "/".join(parts)


def test_a_token_of_this_process_is_alive() -> None:
    token = new_lease_token()
    assert token.split(".", 1)[1] == process_stamp()
    assert not holder_is_gone(token)


def test_a_pid_that_ended_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert holder_is_gone(stamp_with(pid=child.pid))


def test_a_reused_pid_is_gone() -> None:
    """Same pid, another start time: the process that took the lease is not the one running now."""
    assert holder_is_gone(stamp_with(pid=os.getpid(), start="1"))


@pytest.mark.parametrize(
    "token",
    [
        "0" * 32,  # no stamp (another platform, or a lease taken by an older stellate)
        "0" * 32 + ".garbage",
        "0" * 32 + ".a/b/notapid/1",
    ],
)
def test_what_cannot_be_judged_counts_as_alive(token: str) -> None:
    assert not holder_is_gone(token)


def test_a_holder_on_another_host_counts_as_alive() -> None:
    assert socket.gethostname() != "another-host.invalid"
    assert not holder_is_gone(stamp_with(host="another-host.invalid", pid=2**22 + 7))
