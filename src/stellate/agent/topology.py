"""Read models of the forest: digests for the reflection layer and topology nodes for trees and maps."""

from __future__ import annotations

from collections.abc import Iterable

from stellate.store.digests import SessionDigest, TopologyNode, digest_of, node_of
from stellate.store.types import SessionRecord

__all__ = ["SessionDigest", "TopologyNode", "build_forest", "digest_of", "forest_of", "node_of"]


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
