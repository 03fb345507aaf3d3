"""An in-memory mirror of one session's log, kept current event by event.

It holds what context assembly needs — the transcript fold, the session's own slots and the turn cursor —
so a turn never rereads the log: per-turn cost stays flat however long the history grows. While it folds, it
cuts the log into immutable fold segments (`stellate.log.segments`) for the session to store, and a cold open
(`load_history`) starts from the stored segments and folds only the events after the last one.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Callable, Iterable, Sequence

from stellate.errors import StoreError, UsageError
from stellate.log.events import Event, JsonObject
from stellate.log.invariants import Cursor, advance
from stellate.log.messages import Message, ToolCall
from stellate.log.segments import SEGMENT_EVENTS, FoldSegment, decode_segment, encode_segment
from stellate.log.state import SLOT_EVENT_TYPES, Slots, fold_slots
from stellate.log.state import replace as replace_slots
from stellate.log.transcript import TranscriptFold
from stellate.store.base import BaseStore
from stellate.store.segments import StoredSegment
from stellate.store.types import SessionId, SessionRecord

__all__ = ["History", "load_history", "load_history_at", "store_new_segments"]

#: Event types `History._watch` looks at (every other event only moves the cursor and the fold).
_WATCHED = frozenset(
    {
        "assistant/message",
        "step/end",
        "session/forked",
        "memory/put",
        "error/reported",
        "compaction/summary",
        "turn/end",
        "tool/approval_requested",
        "tool/approval_decided",
    }
)


class History:
    """Transcript, own slots and cursor of a session, folded from its log.

    Args:
        inherited: Number of events read by reference from the fork source; slots fold only from later ones.
        weigh: Token estimate of one message, kept summed by the fold.
        weigh_key: Names ``weigh`` in stored segments, so weights made by another counter are not reused.
    """

    def __init__(self, *, inherited: int, weigh: Callable[[Message], int] | None = None, weigh_key: str = "") -> None:
        self.inherited = inherited
        self.weigh_key = weigh_key
        self.fold = TranscriptFold(weigh)
        self._slots = Slots()
        self._newest = 0
        """Time of the newest own event, folded into ``slots.last_activity`` when the slots are read."""
        self.cursor = Cursor()
        self.pending_calls: tuple[ToolCall, ...] = ()
        """Tool calls requested by the open step's model reply."""
        self.approvals: dict[str, dict[str, JsonObject]] = {}
        """The open step's approval requests by call id: ``{"request": data, "decision": data}`` (once decided)."""
        self.last_fork_turn: int | None = None
        """Turn number at the newest fork made from this session (for the split guard's cooldown)."""
        self.consolidated_turn = 0
        """Turn number at the newest consolidation (for consolidation every N user turns)."""
        self.bounded_through: int | None = None
        """Set when compression failed: history at or before this seq is left out of the next call only."""
        self.segment_end = 0
        """Where the events not covered by a (stored or new) fold segment begin."""
        self.new_segments: list[FoldSegment] = []
        """Segments cut while folding, for the session to store once their events are committed."""
        self.transcript_loaded = True
        """False for a history opened from a record alone (`from_record`): its fold is empty."""

    def fork(self, *, weigh: Callable[[Message], int] | None = None, weigh_key: str = "") -> History:
        """The history of a child that inherits this whole log: same transcript, no slots.

        The child shares this fold's messages (no copy: O(1) in the history's length) and continues its
        segments where this history's end.
        """
        child = History(inherited=self.cursor.next_seq, weigh=weigh, weigh_key=weigh_key)
        child.fold = self.fold.copy(weigh)
        if weigh is not None and weigh_key != self.weigh_key:  # another counter weighed these: O(kept) once
            child.fold.reweigh(weigh)
        child.cursor = self.cursor
        child.segment_end = self.segment_end
        return child

    def reweigh(self, weigh: Callable[[Message], int], weigh_key: str) -> None:
        """Weigh the transcript again with another token counter (named ``weigh_key``) and keep using it."""
        self.weigh_key = weigh_key
        self.fold.reweigh(weigh)

    @classmethod
    def from_segments(
        cls,
        segments: Sequence[tuple[FoldSegment, bool]],
        *,
        inherited: int,
        weigh: Callable[[Message], int] | None = None,
        weigh_key: str = "",
    ) -> History:
        """The history at the end of a chain of segments (each flagged True when this session wrote it).

        Only segments holding messages after the last compaction are read; their messages are shared, not
        copied, unless another token counter weighed them.
        """
        last, own = segments[-1]
        history = cls(inherited=inherited, weigh=weigh, weigh_key=weigh_key)
        runs = [
            segment.kept if weigh is None or segment.weigh_key == weigh_key else segment.kept.reweighed(weigh)
            for segment, _ in segments
            if segment.end - 1 > last.cut_through
        ]
        history.fold = TranscriptFold.from_runs(
            runs,
            weigh=weigh,
            summary=last.summary,
            summary_through_seq=last.summary_through_seq,
            cut_through=last.cut_through,
            may_hold_images=any(segment.has_images for segment, _ in segments),
        )
        history.cursor = last.cursor
        if own:
            history.slots = last.slots
            history.last_fork_turn, history.consolidated_turn = last.last_fork_turn, last.consolidated_turn
        history.bounded_through = last.bounded_through
        history.segment_end = last.end
        return history

    @classmethod
    def from_record(
        cls, record: SessionRecord, *, weigh: Callable[[Message], int] | None = None, weigh_key: str = ""
    ) -> History:
        """A history that knows only the record's cursor and slots: for forking and slot writes, not for reading."""
        history = cls(inherited=record.inherited, weigh=weigh, weigh_key=weigh_key)
        history.cursor, history.slots, history.transcript_loaded = record.cursor, record.slots, False
        history.segment_end = record.next_seq  # nothing of the log is folded here: never cut a segment of it
        return history

    @property
    def next_seq(self) -> int:
        """Seq the next event will get."""
        return self.cursor.next_seq

    @property
    def slots(self) -> Slots:
        """The session's own slots (``last_activity`` included) after the events folded so far."""
        if self._newest > self._slots.last_activity:
            self._slots = replace_slots(self._slots, last_activity=self._newest)
        return self._slots

    @slots.setter
    def slots(self, value: Slots) -> None:
        self._slots, self._newest = value, value.last_activity

    def absorb(self, events: Iterable[Event]) -> None:
        """Fold the next events of the log (they must continue it)."""
        add, inherited = self.fold.add, self.inherited
        for event in events:
            self.cursor = cursor = advance(self.cursor, event)
            add(event)
            kind = event.type
            if event.seq >= inherited:
                if kind in SLOT_EVENT_TYPES:
                    self._slots = fold_slots(self._slots, (event,))
                if event.time > self._newest:  # last_activity, applied when the slots are read
                    self._newest = event.time
            if kind in _WATCHED:
                self._watch(event, cursor)
            if event.seq + 1 - self.segment_end >= SEGMENT_EVENTS and not cursor.turn_open:
                self._cut_segment()

    def _watch(self, event: Event, cursor: Cursor) -> None:
        """The state kept beside the fold: pending tool calls, fork and consolidation turns, a failed compression."""
        kind, data, own = event.type, event.data, event.seq >= self.inherited
        if kind == "assistant/message" and cursor.step_open:
            self.pending_calls = tuple(ToolCall(**c) for c in data["tool_calls"])
            self.approvals = {}
        elif kind == "step/end":
            self.pending_calls, self.approvals = (), {}
        elif kind == "tool/approval_requested":
            self.approvals = {**self.approvals, data["call_id"]: {"request": data}}
        elif kind == "tool/approval_decided":
            self.approvals = {**self.approvals, data["call_id"]: {**self.approvals[data["call_id"]], "decision": data}}
        elif kind == "session/forked" and own:
            self.last_fork_turn = data["turn"]
        elif kind == "memory/put" and own and "turn" in data:
            self.consolidated_turn = data["turn"]
        if kind == "error/reported" and "dropped_through_seq" in data:
            self.bounded_through = data["dropped_through_seq"]
        elif kind in ("assistant/message", "compaction/summary", "turn/end"):
            self.bounded_through = None

    def require_transcript(self) -> None:
        """Raise `UsageError` unless the transcript was folded (not so for a history made by `from_record`)."""
        if not self.transcript_loaded:
            raise UsageError("this session was opened for a fork only, without its transcript; load it to read or send")

    def _cut_segment(self) -> None:
        fold = self.fold
        segment = FoldSegment(
            start=self.segment_end,
            end=self.cursor.next_seq,
            kept=fold.kept_since(self.segment_end),
            weigh_key=self.weigh_key,
            summary=fold.summary,
            summary_through_seq=fold.summary_through_seq,
            cut_through=fold.cut_through,
            cursor=self.cursor,
            slots=self.slots,
            last_fork_turn=self.last_fork_turn,
            consolidated_turn=self.consolidated_turn,
            bounded_through=self.bounded_through,
            has_images=fold.may_hold_images,
        )
        self.new_segments.append(segment)
        self.segment_end = segment.end

    def history_messages(self, lead: Iterable[Message] = ()) -> list[Message]:
        """Messages after the summary (open turn included), minus any part dropped by a failed compression.

        Args:
            lead: Messages to put first (the context's system messages), in the same new list.

        Raises:
            UsageError: the history was opened from its record alone (`from_record`).
        """
        self.require_transcript()
        if self.bounded_through is None:
            return self.fold.messages(lead)
        seqs, kept = self.fold.kept_seqs, self.fold.kept
        keep_from = bisect.bisect_right(seqs, self.bounded_through)
        return [*lead, *kept[keep_from:], *self.fold.open_turn_messages()]


async def store_new_segments(store: BaseStore, session_id: SessionId, history: History) -> None:
    """Store the segments ``history`` cut since the last call (call it once their events are committed).

    Segments are derived data: a store that refuses them (busy, read-only) only leaves the next cold open
    more events to fold, so the failure is not raised.
    """
    segments, history.new_segments = history.new_segments, []
    if not segments:
        return
    rows = [StoredSegment(session_id=session_id, start=s.start, end=s.end, data=encode_segment(s)) for s in segments]
    with contextlib.suppress(StoreError):
        await store.write_fold_segments(rows)


async def load_history(
    store: BaseStore,
    record: SessionRecord,
    *,
    weigh: Callable[[Message], int] | None = None,
    weigh_key: str = "",
    stop: int | None = None,
) -> History:
    """Fold ``record``'s log from its stored segments plus the events after them (all events without any).

    With ``stop``, the history of the log's first ``stop`` events (for rebuilding a past context).
    Segments that are missing or damaged cost time, never correctness: their events are folded instead.
    """
    end = stop if stop is not None else record.next_seq
    history = await _segments_up_to(store, record, end, weigh, weigh_key)
    history.absorb(await store.read_events(record.id, start=history.segment_end, stop=end))
    return history


async def load_history_at(store: BaseStore, record: SessionRecord, seq: int) -> tuple[History, Event | None]:
    """The history of the log's first ``seq`` events, and the event at ``seq`` (None if there is none).

    Like ``load_history(store, record, stop=seq)``, reading that event with the others in one query.
    """
    history = await _segments_up_to(store, record, seq, None, "")
    events = await store.read_events(record.id, start=history.segment_end, stop=seq + 1)
    at = events.pop() if events and events[-1].seq == seq else None
    history.absorb(events)
    return history, at


async def _segments_up_to(
    store: BaseStore, record: SessionRecord, end: int, weigh: Callable[[Message], int] | None, weigh_key: str
) -> History:
    """The history at the end of the longest usable chain of stored segments within the first ``end`` events."""
    # A chain from seq 0 needs at least one segment, and none is shorter than SEGMENT_EVENTS: no query below.
    stored = await store.read_fold_segments(record.id, stop=end) if end >= SEGMENT_EVENTS else []
    chain = _usable_chain(stored, record.id, end)
    if chain:
        return History.from_segments(chain, inherited=record.inherited, weigh=weigh, weigh_key=weigh_key)
    return History(inherited=record.inherited, weigh=weigh, weigh_key=weigh_key)


def _usable_chain(stored: Sequence[StoredSegment], session_id: str, stop: int) -> list[tuple[FoldSegment, bool]]:
    """The longest run of segments from seq 0 that decode, skipping (undecoded) those wholly compacted away."""
    starts: dict[int, StoredSegment] = {}
    for row in stored:  # at each start the longest segment wins
        if row.end <= stop and (row.start not in starts or row.end > starts[row.start].end):
            starts[row.start] = row
    rows: list[StoredSegment] = []
    while (rows[-1].end if rows else 0) in starts:
        rows.append(starts[rows[-1].end if rows else 0])
    while rows:
        last = _decode(rows[-1])
        if last is None:
            rows.pop()
            continue
        chain: list[tuple[FoldSegment, bool]] = []
        # Segments wholly compacted away are not even decoded: the next call needs none of their messages.
        for index, row in [(i, r) for i, r in enumerate(rows[:-1]) if r.end - 1 > last.cut_through]:
            segment = _decode(row)
            if segment is None:
                del rows[index:]  # a damaged segment: the chain ends before it
                break
            chain.append((segment, row.session_id == session_id))
        else:
            return [*chain, (last, rows[-1].session_id == session_id)]
    return []


def _decode(row: StoredSegment) -> FoldSegment | None:
    segment = decode_segment(row.data)
    return segment if segment is not None and (segment.start, segment.end) == (row.start, row.end) else None
