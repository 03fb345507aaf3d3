"""Fork boundary rules (DESIGN.md §2, seed 002).

A fork copies nothing: the child references its source's events ``0..boundary``. These functions only
decide the boundary, from the few events around it that a store can fetch with an indexed query, so a
fork costs the same whatever the length of the source's history. A boundary of ``None`` means the empty
prefix: the child starts with no inherited events.

Three modes:
- explicit boundary: must be a seq of the source, outside any open turn, or `ForkError`; never adjusted;
- anchor (``at_seq``, for people clicking a message): the first ``turn/end`` at or after the anchor;
- clip (a tool forking from inside the source's own open turn): the last completed turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from stellate.errors import ForkError
from stellate.log.events import Event

__all__ = [
    "check_explicit_boundary",
    "clip_to_completed_turn",
    "find_last",
    "resolve_anchor",
]


def check_explicit_boundary(boundary: object, *, next_seq: int, last_marker: Event | None) -> int:
    """Validate an explicit, inclusive boundary seq.

    Args:
        boundary: The requested seq.
        next_seq: Length of the source's log.
        last_marker: The last ``turn/start`` or ``turn/end`` at or before ``boundary`` (None if there is none).

    Raises:
        ForkError: ``invalid_boundary`` if it is not a seq of the source; ``open_turn`` if it lies inside a turn.
    """
    if isinstance(boundary, bool) or not isinstance(boundary, int) or not 0 <= boundary < next_seq:
        last = next_seq - 1 if next_seq else "none"
        raise ForkError(
            f"boundary {boundary!r} is not a seq of the source (last seq: {last})",
            code="invalid_boundary",
            boundary=repr(boundary),
        )
    if last_marker is not None and last_marker.type == "turn/start":
        raise ForkError(
            f"boundary {boundary} ends inside open turn {last_marker.data['turn']}; fork at or after its turn/end",
            code="open_turn",
            boundary=boundary,
            turn=last_marker.data["turn"],
        )
    return boundary


def resolve_anchor(
    at_seq: int | None,
    *,
    next_seq: int,
    turn_open: bool,
    marker_at_anchor: Event | None,
    end_after_anchor: Event | None,
    last_turn_end: Event | None,
) -> int | None:
    """Boundary for a fork anchored at a message a person clicked (seed 002's host rule).

    The anchor picks the first ``turn/end`` at or after it, so the fork holds the clicked message's whole turn
    (and, for an anchor between two turns, the turn after it). It never falls back to an earlier turn, so a
    fork never silently leaves out what was clicked.

    Args:
        at_seq: The clicked event's seq, or None for "the session as it stands".
        next_seq: Length of the source's log.
        turn_open: Whether the source's last turn is still open.
        marker_at_anchor: Last turn marker at or before ``at_seq``.
        end_after_anchor: First ``turn/end`` at or after ``at_seq``.
        last_turn_end: Last ``turn/end`` of the log.

    Returns:
        The end of the first turn ending at or after the anchor; the anchor itself when no turn follows it
        (only slot events and messages outside turns, such as a fork's opening message, come after the last
        turn); the last completed turn when there is no anchor or it lies past the end (None if no turn
        completed).

    Raises:
        ForkError: ``invalid_boundary`` for a negative anchor; ``fork_unavailable`` when the turn that would
            end the fork is still open (the anchor lies in the running turn, or just before it).
    """
    if at_seq is None or at_seq >= next_seq:
        return clip_to_completed_turn(last_turn_end)
    if isinstance(at_seq, bool) or not isinstance(at_seq, int) or at_seq < 0:
        raise ForkError(f"anchor {at_seq!r} is not a seq", code="invalid_boundary", at_seq=repr(at_seq))
    if end_after_anchor is not None:
        return end_after_anchor.seq
    inside = marker_at_anchor is not None and marker_at_anchor.type == "turn/start"
    if inside or turn_open:
        raise ForkError(
            f"the turn holding seq {at_seq} (or the one after it) has not finished; fork again when it has",
            code="fork_unavailable",
            at_seq=at_seq,
        )
    return at_seq


def clip_to_completed_turn(last_turn_end: Event | None) -> int | None:
    """Boundary for a fork made from inside the source's open turn: its last completed turn."""
    return None if last_turn_end is None else last_turn_end.seq


def find_last(events: Sequence[Event], types: tuple[str, ...], *, at_or_before: int) -> Event | None:
    """The last event of one of ``types`` with seq at or before ``at_or_before`` (list helper for tests)."""
    for event in reversed(events):
        if event.seq <= at_or_before and event.type in types:
            return event
    return None
