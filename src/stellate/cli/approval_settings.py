"""Which tools need approval in `stellate chat` and `stellate serve`: ``$STELLATE_APPROVE_TOOLS``.

A comma-separated list of tool names, each optionally with a deadline in seconds and what it decides::

    STELLATE_APPROVE_TOOLS="create_session, delete_file=3600:approve"

A bare name always asks and never times out; ``=SECONDS`` denies past the deadline, ``=SECONDS:approve``
approves.
"""

from __future__ import annotations

from collections.abc import Mapping

from stellate.engine.approval import Approval
from stellate.errors import UsageError

__all__ = ["APPROVE_TOOLS_ENV", "approvals_from_env"]

APPROVE_TOOLS_ENV = "STELLATE_APPROVE_TOOLS"


def approvals_from_env(env: Mapping[str, str]) -> dict[str, Approval]:
    """The approvals ``$STELLATE_APPROVE_TOOLS`` asks for (none when unset).

    Raises:
        UsageError: ``config_invalid`` for an entry that is not ``NAME``, ``NAME=SECONDS`` or ``NAME=SECONDS:MODE``.
    """
    approvals: dict[str, Approval] = {}
    for entry in filter(None, (part.strip() for part in env.get(APPROVE_TOOLS_ENV, "").split(","))):
        name, _, deadline = entry.partition("=")
        seconds, _, mode = deadline.partition(":")
        try:
            if mode not in ("", "approve", "deny"):
                raise ValueError(mode)
            timeout = float(seconds) if seconds else None
            approvals[name.strip()] = Approval(timeout=timeout, on_timeout="approve" if mode == "approve" else "deny")
        except (ValueError, UsageError) as exc:
            raise UsageError(
                f"${APPROVE_TOOLS_ENV}: {entry!r} is not NAME, NAME=SECONDS or NAME=SECONDS:approve|deny",
                code="config_invalid",
            ) from exc
    return approvals
