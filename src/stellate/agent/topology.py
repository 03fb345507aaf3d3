"""Read models of the forest: digests for the reflection layer and topology nodes for trees and maps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stellate.store.digests import SessionDigest, digest_of
from stellate.store.types import SessionRecord

__all__ = ["SessionDigest", "TopologyNode", "build_forest", "digest_of", "forest_of", "node_of"]


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


def build_forest(records: Iterable[SessionRecord]) -> list[TopologyNode]:
    """Roots (in creation order) with their subtrees; a node whose parent is missing counts as a root."""
    return forest_of(node_of(r) for r in records)


def forest_of(flat: Iterable[TopologyNode]) -> list[TopologyNode]:
    """The forest of nodes listed in creation order (pages of it, concatenated): children and depths filled in.

    A node whose parent is not listed counts as a root.
    """
    nodes = {node.id: node for node in flat}
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
