"""Read models of the forest: digests for the reflection layer and topology nodes for trees and maps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stellate.store.digests import SessionDigest, digest_of
from stellate.store.types import SessionRecord

__all__ = ["SessionDigest", "TopologyNode", "build_forest", "digest_of"]


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


def build_forest(records: Iterable[SessionRecord]) -> list[TopologyNode]:
    """Roots (in creation order) with their subtrees; a node whose parent is missing counts as a root."""
    nodes: dict[str, TopologyNode] = {
        r.id: TopologyNode(
            id=r.id,
            label=r.label,
            status=r.status,
            parent_id=r.parent_id,
            source_id=r.source_id,
            turn_count=r.turn_count,
            last_activity=r.slots.last_activity,
            inherited_turns=r.inherited_turns,
            created_at=r.created_at,
            awaiting_approval=len(r.cursor.awaiting),
        )
        for r in records
    }
    roots: list[TopologyNode] = []
    for node in nodes.values():
        parent = nodes.get(node.parent_id) if node.parent_id else None
        (parent.children if parent else roots).append(node)
    stack = [(root, 0) for root in roots]
    while stack:
        node, depth = stack.pop()
        node.depth = depth
        stack.extend((child, depth + 1) for child in node.children)
    return roots
