"""Cursor pagination over lists in creation order: the cursor names the last item of the previous page."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from stellate.server.problems import ProblemError

__all__ = ["page_of"]


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


def _encode(session_id: str) -> str:
    return base64.urlsafe_b64encode(session_id.encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProblemError("validation_error", "the cursor is not valid") from exc
