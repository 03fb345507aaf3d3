from __future__ import annotations

import pytest

from stellate.errors import ForkError
from stellate.log import Event, check_explicit_boundary, resolve_anchor

START = Event(seq=2, type="turn/start", time=0, data={"turn": 1})
END = Event(seq=5, type="turn/end", time=0, data={"turn": 1, "reason": "completed"})


@pytest.mark.parametrize("boundary", [-1, 10, 0.5, True, "3", None])
def test_boundary_outside_the_log_is_invalid(boundary: object) -> None:
    with pytest.raises(ForkError) as info:
        check_explicit_boundary(boundary, next_seq=10, last_marker=None)
    assert info.value.code == "invalid_boundary"


def test_boundary_on_an_empty_source_is_invalid() -> None:
    with pytest.raises(ForkError, match=r"last seq: none"):
        check_explicit_boundary(0, next_seq=0, last_marker=None)


def test_boundary_inside_an_open_turn_is_refused_not_clipped() -> None:
    with pytest.raises(ForkError) as info:
        check_explicit_boundary(3, next_seq=10, last_marker=START)
    assert info.value.code == "open_turn"
    assert check_explicit_boundary(6, next_seq=10, last_marker=END) == 6


def test_anchor_rules() -> None:
    kw = {"next_seq": 10, "last_turn_end": END, "turn_open": False}
    assert resolve_anchor(None, marker_at_anchor=None, end_after_anchor=None, **kw) == 5
    assert resolve_anchor(99, marker_at_anchor=None, end_after_anchor=None, **kw) == 5
    assert resolve_anchor(3, marker_at_anchor=START, end_after_anchor=END, **kw) == 5
    assert resolve_anchor(7, marker_at_anchor=END, end_after_anchor=None, **kw) == 7
    with pytest.raises(ForkError) as info:
        resolve_anchor(3, marker_at_anchor=START, end_after_anchor=None, **{**kw, "turn_open": True})
    assert info.value.code == "fork_unavailable"
    with pytest.raises(ForkError):
        resolve_anchor(-2, marker_at_anchor=None, end_after_anchor=None, **kw)


def test_an_anchor_between_turns_takes_the_first_turn_end_after_it() -> None:
    """Seed 002: a slot event between two turns anchors the fork at the end of the turn after it."""
    later_end = Event(seq=9, type="turn/end", time=0, data={"turn": 2, "reason": "completed"})
    kw = {"next_seq": 10, "last_turn_end": later_end, "turn_open": False}
    assert resolve_anchor(6, marker_at_anchor=END, end_after_anchor=later_end, **kw) == 9
    before_any = {"next_seq": 10, "last_turn_end": END, "turn_open": False}
    assert resolve_anchor(0, marker_at_anchor=None, end_after_anchor=END, **before_any) == 5


def test_an_anchor_just_before_a_running_turn_is_unavailable() -> None:
    """Never clipped to an earlier turn: the turn that would end the fork is still running."""
    with pytest.raises(ForkError) as info:
        resolve_anchor(6, next_seq=10, marker_at_anchor=END, end_after_anchor=None, last_turn_end=END, turn_open=True)
    assert info.value.code == "fork_unavailable"


def test_no_completed_turn_means_an_empty_prefix() -> None:
    assert (
        resolve_anchor(
            None, next_seq=3, turn_open=False, marker_at_anchor=None, end_after_anchor=None, last_turn_end=None
        )
        is None
    )
