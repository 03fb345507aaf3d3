"""Stored fold segments: derived rows beside a session's log that spare a cold open the re-fold of it.

The store keeps them as opaque text under the session that wrote them (`stellate.log.segments` defines and
checks the content) and never trusts them for anything: losing or damaging one costs speed, never correctness.
"""

from __future__ import annotations

from dataclasses import dataclass

from stellate.store.types import SessionId

__all__ = ["StoredSegment"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSegment:
    """One stored segment of a session's fold: events ``[start, end)`` of its log."""

    session_id: SessionId
    """The session that wrote it (a fork source's segments serve its forks too)."""
    start: int
    end: int
    data: str
