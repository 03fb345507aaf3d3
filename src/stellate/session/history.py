"""An in-memory mirror of one session's log, kept current event by event.

It holds what context assembly needs — the transcript fold, the session's own slots and the turn cursor —
so a turn never rereads the log: per-turn cost stays flat however long the history grows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from stellate.log.events import Event
from stellate.log.invariants import Cursor, advance
from stellate.log.messages import Message, ToolCall
from stellate.log.state import Slots, fold_slots
from stellate.log.transcript import TranscriptFold

__all__ = ["History"]


class History:
    """Transcript, own slots and cursor of a session, folded from its log.

    Args:
        inherited: Number of events read by reference from the fork source; slots fold only from later ones.
        weigh: Token estimate of one message, kept summed by the fold.
    """

    def __init__(self, *, inherited: int, weigh: Callable[[Message], int] | None = None) -> None:
        self.inherited = inherited
        self.fold = TranscriptFold(weigh)
        self.slots = Slots()
        self.cursor = Cursor()
        self.pending_calls: tuple[ToolCall, ...] = ()
        """Tool calls requested by the open step's model reply."""
        self.last_fork_turn: int | None = None
        """Turn number at the newest fork made from this session (for the split guard's cooldown)."""
        self.consolidated_turn = 0
        """Turn number at the newest consolidation (for consolidation every N user turns)."""
        self.bounded_through: int | None = None
        """Set when compression failed: history at or before this seq is left out of the next call only."""

    def fork(self, *, weigh: Callable[[Message], int] | None = None) -> History:
        """The history of a child that inherits this whole log: same transcript, no slots (O(1) I/O)."""
        child = History(inherited=self.cursor.next_seq, weigh=weigh)
        child.fold = self.fold.copy(weigh)
        child.cursor = self.cursor
        return child

    @property
    def next_seq(self) -> int:
        """Seq the next event will get."""
        return self.cursor.next_seq

    def absorb(self, events: Iterable[Event]) -> None:
        """Fold the next events of the log (they must continue it)."""
        for event in events:
            self.cursor = advance(self.cursor, event)
            self.fold.add(event)
            if event.seq >= self.inherited:
                self.slots = fold_slots(self.slots, (event,))
            if event.type == "assistant/message" and self.cursor.step_open:
                self.pending_calls = tuple(ToolCall(**c) for c in event.data["tool_calls"])
            elif event.type == "step/end":
                self.pending_calls = ()
            if event.type == "session/forked" and event.seq >= self.inherited:
                self.last_fork_turn = event.data["turn"]
            elif event.type == "memory/put" and event.seq >= self.inherited and "turn" in event.data:
                self.consolidated_turn = event.data["turn"]
            if event.type == "error/reported" and "dropped_through_seq" in event.data:
                self.bounded_through = event.data["dropped_through_seq"]
            elif event.type in ("assistant/message", "compaction/summary", "turn/end"):
                self.bounded_through = None

    def history_messages(self) -> list[Message]:
        """Messages after the summary (open turn included), minus any part dropped by a failed compression."""
        if self.bounded_through is None:
            return self.fold.messages()
        seqs, kept = self.fold.kept_seqs, self.fold.kept
        keep_from = next((i for i, s in enumerate(seqs) if s > self.bounded_through), len(kept))
        return kept[keep_from:] + self.fold.open_turn_messages()
