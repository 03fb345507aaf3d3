"""Keyset pages of a space's sessions, shared by the SQL backends: ``position`` (the creation order) is the key.

A page is one range scan of the ``(space, position)`` index after the position of the session it continues
after, so its cost follows the page, not the forest. An empty page asked after a session checks that the
session exists (a cursor naming an erased session is refused, not read as the end).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from stellate.store._sql import DIGEST_COLUMNS, SELECTED_COLUMNS, digest_from_row, record_from_row
from stellate.store.digests import SessionDigest, TopologyNode
from stellate.store.types import SessionId, SessionRecord

__all__ = ["EXISTS_SQL", "SqlListing", "node_from_row", "page_sql"]

Listed = Literal["digests", "records", "nodes"]

#: What a topology node is read from, by dialect (``?``: SQLite, ``%s``: PostgreSQL). Only its inherited turns
#: live in the cursor's JSON alone (the database extracts them); the cursor itself is read for an open turn only
#: (its calls awaiting approval), so the few running or paused sessions are the only JSON parsed here.
_NODE_COLUMNS = {
    "?": "id, label, status, parent_id, source_id, turn_count, last_activity, created_at,"
    " COALESCE(json_extract(cursor, '$.inherited_turns'), 0), CASE WHEN turn_open THEN cursor END",
    "%s": "id, label, status, parent_id, source_id, turn_count, last_activity, created_at,"
    " COALESCE((cursor::json->>'inherited_turns')::bigint, 0), CASE WHEN turn_open THEN cursor END",
}

#: Whether the session a page continues after is one of the space's (parameters: id, space).
EXISTS_SQL = "SELECT 1 FROM sessions WHERE id = {p} AND space = {p}"


def page_sql(
    *,
    placeholder: str,
    space: str,
    after: SessionId | None,
    limit: int,
    parent_id: SessionId | None = None,
    status: str | None = None,
    listed: Listed = "digests",
) -> tuple[str, tuple[Any, ...]]:
    """The query of one page of ``listed`` (digests, records or nodes) in creation order, and its parameters."""
    p = placeholder
    if listed == "nodes":
        columns = _NODE_COLUMNS[p]
    else:
        columns = ", ".join(SELECTED_COLUMNS if listed == "records" else DIGEST_COLUMNS)
    sql = f"SELECT {columns} FROM sessions WHERE space = {p}"
    params: list[Any] = [space]
    if after is not None:
        sql += f" AND position > (SELECT position FROM sessions WHERE id = {p} AND space = {p})"
        params += [after, space]
    if parent_id is not None:
        sql += f" AND parent_id = {p}"
        params.append(parent_id)
    if status is not None:
        sql += f" AND status = {p}"
        params.append(status)
    return f"{sql} ORDER BY position LIMIT {int(limit)}", tuple(params)


_new = object.__new__


def node_from_row(row: Sequence[Any]) -> TopologyNode:
    """A childless `TopologyNode` from a row of the nodes query (built without the dataclass's ``__init__``)."""
    node = _new(TopologyNode)
    (
        node.id,
        node.label,
        node.status,
        node.parent_id,
        node.source_id,
        node.turn_count,
        node.last_activity,
        node.created_at,
        node.inherited_turns,
        cursor,
    ) = row
    node.awaiting_approval = 0 if cursor is None else len(json.loads(cursor).get("awaiting", ()))
    node.depth = 0
    node.children = []
    return node


class SqlListing:
    """The paged listing methods of a SQL store (before `BaseStore` in its bases).

    A backend names its ``placeholder`` and runs a page's query in `_page`, which refuses a cursor naming no
    session (``bad_cursor``).
    """

    space: str
    placeholder: ClassVar[str]

    async def list_digests_page(
        self,
        *,
        after: SessionId | None = None,
        limit: int = 100,
        parent_id: SessionId | None = None,
        status: str | None = None,
    ) -> list[SessionDigest]:
        """A keyset page of the digests (see `Store.list_digests_page`)."""
        sql, params = page_sql(
            placeholder=self.placeholder, space=self.space, after=after, limit=limit, parent_id=parent_id, status=status
        )
        return [digest_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_sessions_page(self, *, after: SessionId | None = None, limit: int = 100) -> list[SessionRecord]:
        """A keyset page of `list_sessions` (see `Store.list_sessions_page`)."""
        sql, params = page_sql(
            placeholder=self.placeholder, space=self.space, after=after, limit=limit, listed="records"
        )
        return [record_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def list_nodes_page(self, *, after: SessionId | None = None, limit: int = 1000) -> list[TopologyNode]:
        """A keyset page of the forest's nodes, childless (see `Store.list_nodes_page`)."""
        sql, params = page_sql(placeholder=self.placeholder, space=self.space, after=after, limit=limit, listed="nodes")
        return [node_from_row(r) for r in await self._page(sql, params, after, limit)]

    async def _page(self, sql: str, params: tuple[Any, ...], after: SessionId | None, limit: int) -> list[Any]:
        raise NotImplementedError
