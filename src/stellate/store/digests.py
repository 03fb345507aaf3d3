"""Session digests: the few materialized columns the reflection layer and listings read, never the history."""

from __future__ import annotations

from dataclasses import dataclass

from stellate.store.types import SessionRecord

__all__ = ["SessionDigest", "digest_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionDigest:
    """What the reflection layer reads about one session (never its full history)."""

    id: str
    label: str
    status: str
    parent_id: str | None
    memory: str | None
    insight: str | None
    turn_count: int
    last_activity: int
    """Epoch milliseconds of the newest event."""
    turn_open: bool = False
    """Whether a turn is in progress (or was left open by a writer that died; the next turn repairs it)."""
    awaiting_approval: int = 0
    """Tool calls of the open turn waiting for a person's approval (the turn is paused, not running).

    Counted by the agent (`stellate.agent.approvals.with_approvals`): a store's listing leaves it 0, as its
    columns hold no cursor."""


def digest_of(record: SessionRecord) -> SessionDigest:
    """The digest of a stored session."""
    slots = record.slots
    return SessionDigest(
        id=record.id,
        label=slots.label,
        status=slots.status,
        parent_id=record.parent_id,
        memory=slots.memory,
        insight=slots.insight,
        turn_count=record.turn_count,
        last_activity=slots.last_activity,
        turn_open=record.cursor.turn_open,
    )
