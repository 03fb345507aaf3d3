"""Session digests and topology nodes: the few materialized columns listings and maps read, never the history."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stellate.errors import UsageError
from stellate.store.types import SessionId, SessionRecord

__all__ = ["SessionDigest", "TopologyNode", "bad_cursor", "digest_of", "node_of", "page_after"]


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


@dataclass(slots=True, kw_only=True)
class TopologyNode:
    """One session in the forest, with its children."""

    id: str
    label: str
    status: str
    parent_id: str | None
    source_id: str | None
    """Where the history came from (may differ from the topology parent)."""
    turn_count: int
    """Turns in the session's log, the inherited ones included."""
    last_activity: int
    inherited_turns: int = 0
    """Of ``turn_count``, the turns read from the fork source (the session's own: the difference)."""
    created_at: int = 0
    """Epoch ms of its creation (tells apart sessions with the same label)."""

    awaiting_approval: int = 0
    """Tool calls of the session's paused turn waiting for approval."""
    depth: int = 0
    children: list[TopologyNode] = field(default_factory=list)


def node_of(record: SessionRecord) -> TopologyNode:
    """A session's node without its children (a page of the forest lists these, in creation order)."""
    return TopologyNode(
        id=record.id,
        label=record.label,
        status=record.status,
        parent_id=record.parent_id,
        source_id=record.source_id,
        turn_count=record.turn_count,
        last_activity=record.slots.last_activity,
        inherited_turns=record.inherited_turns,
        created_at=record.created_at,
        awaiting_approval=len(record.cursor.awaiting),
    )


def bad_cursor(after: str) -> UsageError:
    """The error of a page asked for after a session the listing does not hold (erased, another space's, made up)."""
    return UsageError(
        f"the listing holds no session {after!r} to continue after; start again without a cursor", code="bad_cursor"
    )


def page_after(
    digests: Iterable[SessionDigest],
    *,
    after: SessionId | None,
    limit: int,
    parent_id: SessionId | None = None,
    status: str | None = None,
) -> list[SessionDigest]:
    """Up to ``limit`` of ``digests`` (in creation order) after the one named ``after``, filtered: a listing's page.

    What `Store.list_digests_page` answers, over a full listing (a backend without a keyset query of its own).

    Raises:
        UsageError: ``bad_cursor`` when ``after`` names no digest of the listing.
    """
    found = after is None
    page: list[SessionDigest] = []
    for digest in digests:
        if not found:
            found = digest.id == after
            continue
        if (parent_id is None or digest.parent_id == parent_id) and (status is None or digest.status == status):
            page.append(digest)
            if len(page) >= limit:
                return page
    if not found:
        raise bad_cursor(str(after))
    return page
