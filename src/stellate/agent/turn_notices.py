"""What a turn tells its watchers besides its own events: that it waits for another writer, or that it failed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from stellate.engine.events import ErrorRaised, TurnEvent, TurnWaiting
from stellate.errors import StellateError
from stellate.store.types import Lease

__all__ = ["turn_error", "waiting_notice"]


def waiting_notice(
    queue: asyncio.Queue[TurnEvent | None], session_id: str, wait: float
) -> Callable[[Lease | None], None]:
    """The ``on_wait`` of a turn's lease: puts one `TurnWaiting` (who holds the session, since when) on ``queue``."""

    def notice(lease: Lease | None) -> None:
        queue.put_nowait(
            TurnWaiting(
                session_id=session_id,
                holder=lease.owner if lease else None,
                held_since=lease.acquired_at if lease else None,
                wait_seconds=wait,
            )
        )

    return notice


def turn_error(session_id: str, exc: Exception) -> ErrorRaised:
    """A failed turn as an event (the log records it too, as ``turn/end {error}``)."""
    if isinstance(exc, StellateError):
        return ErrorRaised(
            session_id=session_id, source="turn", code=exc.code, message=exc.message, details=dict(exc.details)
        )
    return ErrorRaised(session_id=session_id, source="turn", code="unexpected_error", message=type(exc).__name__)
