"""Cursor pagination over lists in creation order: the cursor names the last item of the previous page.

The cursor is opaque to clients (base64 of the last session's id): `page_of` cuts a list held in full, and
`keyset_page` asks the store for the page itself (`Store.list_digests_page`), so a page costs what it holds.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from stellate.errors import UsageError
from stellate.server.problems import ProblemError

__all__ = ["decode_cursor", "encode_cursor", "keyset_page", "page_of"]


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


def page_of(
    items: Sequence[T], cursor: str | None, limit: int, keep: Callable[[T], bool] = lambda _: True
) -> tuple[list[T], str | None]:
    """The items ``keep`` accepts after ``cursor`` (from the start without one), and the next page's cursor.

    Items are never removed and new ones are appended, so a cursor stays valid while the list grows, and
    whatever happens to the item it names (an archived session still has its place).

    Raises:
        ProblemError: ``validation_error`` for a cursor this server did not make.
    """
    start = 0
    if cursor is not None:
        after = _decode(cursor)
        position = next((i for i, item in enumerate(items) if item.id == after), None)
        if position is None:
            raise ProblemError("validation_error", "the cursor does not match this listing; start again without it")
        start = position + 1
    page: list[T] = []
    for item in items[start:]:
        if not keep(item):
            continue
        if len(page) == limit:
            return page, _encode(page[-1].id)
        page.append(item)
    return page, None


async def keyset_page(
    fetch: Callable[[str | None, int], Awaitable[Sequence[T]]],
    cursor: str | None,
    limit: int,
    keep: Callable[[T], bool] | None = None,
) -> tuple[list[T], str | None]:
    """The page after ``cursor`` read through ``fetch(after, n)`` (a store's keyset page), and the next cursor.

    Reads one item past ``limit`` to tell the last page (no cursor) from a full one; items ``keep`` refuses are
    read past in chunks, so a filter the store cannot apply costs the items it skips, never the whole listing.

    Raises:
        ProblemError: ``validation_error`` for a cursor this server did not make or that names an erased session.
    """
    after = _decode(cursor) if cursor is not None else None
    want = limit + 1 if keep is None else max(limit + 1, 200)
    kept: list[T] = []
    try:
        while len(kept) <= limit:
            chunk = await fetch(after, want)
            kept += chunk if keep is None else [item for item in chunk if keep(item)]
            if len(chunk) < want:
                break
            after = chunk[-1].id
    except UsageError as exc:
        if exc.code != "bad_cursor":
            raise
        raise ProblemError(
            "validation_error", "the cursor does not match this listing; start again without it"
        ) from exc
    if len(kept) > limit:
        return kept[:limit], _encode(kept[limit - 1].id)
    return kept, None


def encode_cursor(session_id: str) -> str:
    """The cursor of a page that ends at ``session_id``."""
    return _encode(session_id)


def decode_cursor(cursor: str) -> str:
    """The session id a cursor names.

    Raises:
        ProblemError: ``validation_error`` for a cursor that is not one.
    """
    return _decode(cursor)


def _encode(session_id: str) -> str:
    return base64.urlsafe_b64encode(session_id.encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProblemError("validation_error", "the cursor is not valid") from exc
