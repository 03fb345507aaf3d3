"""`Cursor`: the little state the log's checker folds, event by event (`stellate.log.invariants` folds it).

A module of its own, importing nothing of the log: a store's session records carry one, and reading a listing
of records (``stellate sessions list``) should not load the checker, the messages or the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stellate.log.events import JsonObject

__all__ = ["Cursor"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cursor:
    """What the checker knows about a log after its last event."""

    next_seq: int = 0
    """Seq the next event must carry."""
    last_turn: int = 0
    """Number of the newest turn started (0 before the first)."""
    turn_open: bool = False
    step: int = 0
    """Number of the newest step of the open turn (0 before the first)."""
    step_open: bool = False
    step_replied: bool = False
    """Whether the open step already holds its assistant message."""
    requested: tuple[str, ...] = ()
    """Call ids the open step's assistant message requested, in order."""
    started: tuple[str, ...] = ()
    """Call ids with a recorded ``tool/call``."""
    answered: tuple[str, ...] = ()
    """Call ids with a ``tool/result``."""
    last_end_seq: int = -1
    """Seq of the newest ``turn/end`` (-1 before the first): lets a store fork at the latest completed turn
    without a query."""
    inherited_turns: int = field(default=0, compare=False)
    """Turns read from a fork source by reference (a fork's own turns are ``last_turn - inherited_turns``).

    Lineage the store records at the fork, not state the checker folds from the log: cursors that differ only
    here are equal (a session folded from its whole log does not know where its own part begins)."""

    awaiting: tuple[str, ...] = ()
    """Call ids of the open step waiting for a person's approval (``tool/approval_requested``, not yet decided)."""

    @property
    def paused(self) -> bool:
        """Whether the open turn is paused: tool calls wait for approval and no writer runs it (not a dead turn)."""
        return bool(self.awaiting)

    @property
    def unanswered(self) -> tuple[str, ...]:
        """Requested calls of the open step that have no result yet, in call order."""
        return tuple(c for c in self.requested if c not in self.answered)

    def to_json(self) -> JsonObject:
        """Plain JSON for a store to keep beside the session."""
        return {
            "next_seq": self.next_seq,
            "last_turn": self.last_turn,
            "turn_open": self.turn_open,
            "step": self.step,
            "step_open": self.step_open,
            "step_replied": self.step_replied,
            "requested": list(self.requested),
            "started": list(self.started),
            "answered": list(self.answered),
            "last_end_seq": self.last_end_seq,
            "inherited_turns": self.inherited_turns,
            "awaiting": list(self.awaiting),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> Cursor:
        """Inverse of `to_json`."""
        return cls(
            next_seq=data["next_seq"],
            last_turn=data["last_turn"],
            turn_open=data["turn_open"],
            step=data["step"],
            step_open=data["step_open"],
            step_replied=data["step_replied"],
            requested=tuple(data["requested"]),
            started=tuple(data["started"]),
            answered=tuple(data["answered"]),
            last_end_seq=data.get("last_end_seq", -1),
            inherited_turns=data.get("inherited_turns", 0),  # stored before it was kept: counted as own
            awaiting=tuple(data.get("awaiting", ())),
        )
