"""Finding a session from what a person types: its id, the first characters of its id, or its label.

Ids are long (``s-01a228ddc2cd-aa4c08af8296``) and differ from one database to the next, so every command
and slash command that takes a session also takes a unique id prefix or a label (case and spacing do not
matter). A reference that fits several sessions is refused with the candidates, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from stellate.cli.columns import plural
from stellate.errors import NotFoundError, UsageError
from stellate.store import SessionId, SessionRecord

if TYPE_CHECKING:
    from stellate.store import BaseStore

__all__ = ["SessionFilter", "filter_sessions", "find_session", "matching_sessions", "resolve_session"]

_SHOWN_CANDIDATES = 5


async def resolve_session(store: BaseStore, reference: str) -> SessionId:
    """The id of the one session ``reference`` names: an exact id, a unique id prefix or a unique label.

    Raises:
        NotFoundError: ``session_not_found`` when nothing matches.
        UsageError: ``usage_error`` when several sessions match; the message lists them.
    """
    wanted = reference.strip()
    if not wanted:
        raise UsageError("a session id, id prefix or label is needed")
    try:
        return (await store.get_session(SessionId(wanted))).id
    except NotFoundError:
        pass
    return find_session(await store.list_sessions(), wanted)


def find_session(records: Sequence[SessionRecord], reference: str) -> SessionId:
    """`resolve_session` over a listing already read: the one session of ``records`` that ``reference`` names.

    Raises:
        NotFoundError: ``session_not_found`` when nothing matches.
        UsageError: ``usage_error`` when several sessions match; the message lists them.
    """
    wanted = reference.strip()
    if not wanted:
        raise UsageError("a session id, id prefix or label is needed")
    exact = [r for r in records if r.id == wanted]
    if exact:
        return exact[0].id
    found = matching_sessions(records, wanted)
    if len(found) == 1:
        return found[0].id
    if not found:
        raise NotFoundError(
            f"no session has the id, id prefix or label {wanted!r} (`stellate sessions list` shows them)",
            code="session_not_found",
            session_id=wanted,
        )
    raise _ambiguous(wanted, found)


def matching_sessions(records: Sequence[SessionRecord], reference: str) -> list[SessionRecord]:
    """The sessions whose id starts with ``reference`` or whose label equals it (ignoring case and spacing)."""
    label = _normalized(reference)
    return [r for r in records if r.id.startswith(reference) or _normalized(r.slots.label) == label]


def _normalized(label: str) -> str:
    return " ".join(label.split()).casefold()


def _ambiguous(reference: str, found: Sequence[SessionRecord]) -> UsageError:
    shown = "; ".join(
        f"{r.id} ({r.slots.label or 'no label'}, {plural(r.turn_count, 'turn')})" for r in found[:_SHOWN_CANDIDATES]
    )
    more = f"; and {len(found) - _SHOWN_CANDIDATES} more" if len(found) > _SHOWN_CANDIDATES else ""
    return UsageError(
        f"{reference!r} matches {len(found)} sessions: {shown}{more}; give more of the id",
        reference=reference,
        candidates=[r.id for r in found],
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFilter:
    """Which sessions ``stellate sessions list`` and ``/sessions`` show."""

    search: str | None = None
    """Words that must all appear (ignoring case) in the label, memory, insight or system prompt."""
    status: str | None = None
    """``active`` or ``archived``; None for both."""
    under: str | None = None
    """Only this session and the sessions below it in the forest."""
    roots: bool = False
    """Only sessions without a topology parent."""


def filter_sessions(records: Sequence[SessionRecord], wanted: SessionFilter) -> list[SessionRecord]:
    """The records ``wanted`` selects, most recently active first."""
    words = (wanted.search or "").casefold().split()
    inside = _subtree(records, wanted.under) if wanted.under is not None else None
    chosen = [
        r
        for r in records
        if (wanted.status is None or r.slots.status == wanted.status)
        and (not wanted.roots or r.parent_id is None)
        and (inside is None or r.id in inside)
        and all(word in _searchable(r) for word in words)
    ]
    return sorted(chosen, key=lambda r: r.slots.last_activity, reverse=True)


def _searchable(record: SessionRecord) -> str:
    slots = record.slots
    return " ".join(filter(None, (slots.label, slots.memory, slots.insight, slots.system_prompt))).casefold()


def _subtree(records: Sequence[SessionRecord], top: str) -> set[str]:
    children: dict[str | None, list[str]] = {}
    for record in records:
        children.setdefault(record.parent_id, []).append(record.id)
    found, stack = set(), [top]
    while stack:
        node = stack.pop()
        found.add(node)
        stack.extend(children.get(node, ()))
    return found
