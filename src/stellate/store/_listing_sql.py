"""Keyset pages of a space's sessions, shared by the SQL backends: ``position`` (the creation order) is the key.

A page is one range scan of the ``(space, position)`` index after the position of the session it continues
after, so its cost follows the page, not the forest. An empty page asked after a session checks that the
session exists (a cursor naming an erased session is refused, not read as the end).
"""

from __future__ import annotations

from typing import Any

from stellate.store._sql import DIGEST_COLUMNS, SELECTED_COLUMNS
from stellate.store.types import SessionId

__all__ = ["EXISTS_SQL", "page_sql"]

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
    records: bool = False,
) -> tuple[str, tuple[Any, ...]]:
    """The query of one page of digests (of records when ``records``) in creation order, and its parameters."""
    p = placeholder
    columns = SELECTED_COLUMNS if records else DIGEST_COLUMNS
    sql = f"SELECT {', '.join(columns)} FROM sessions WHERE space = {p}"
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
