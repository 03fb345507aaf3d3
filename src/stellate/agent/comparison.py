"""Two sessions side by side from their common ancestor: the shared prefix, then their turns aligned.

Lineage comes from the fork records alone: a session reads its source's events ``0..fork_seq`` by reference,
so two sessions agree on every seq up to the smallest cut on their paths to the nearest session both descend
from. Past that point each side's turns are folded from its own events and aligned by turn number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from stellate.errors import NotFoundError
from stellate.log.events import Event
from stellate.log.usage import UsageTotals, usage_totals
from stellate.store import BaseStore, SessionId, SessionRecord

__all__ = ["Comparison", "ComparedSide", "ToolCallView", "TurnRow", "TurnView", "compare_sessions", "fold_turns"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallView:
    """One tool call a turn made."""

    name: str
    arguments: str
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnView:
    """One turn as a person compares it: the question, the final answer, the tools and what it cost."""

    turn: int
    user: str | None = None
    reply: str = ""
    """The turn's last assistant text (model output: untrusted)."""
    reason: str | None = None
    """How the turn ended (None while it is open)."""
    model: str | None = None
    tool_calls: list[ToolCallView] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRow:
    """The two sides' turn of one number (a side is None when it has no such turn)."""

    turn: int
    a: TurnView | None
    b: TurnView | None
    tools_differ: bool
    """The two sides called different tools (name or arguments), or only one side has the turn."""
    replies_differ: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparedSide:
    """One side of a comparison, its totals over the turns after the split."""

    id: str
    label: str
    turn_count: int
    totals: UsageTotals


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Two sessions from their common ancestor."""

    a: ComparedSide
    b: ComparedSide
    ancestor_id: str | None
    """The nearest session both descend from by forks (None: unrelated sessions)."""
    shared_through_seq: int
    """Last seq both logs share (-1: nothing shared)."""
    shared_turns: list[TurnView]
    """The turns both hold, in order (the folded prefix)."""
    rows: list[TurnRow]
    """The turns after the split, aligned by turn number."""


async def compare_sessions(store: BaseStore, a_id: str, b_id: str) -> Comparison:
    """Compare two sessions of ``store``.

    Raises:
        NotFoundError: either session is unknown.
    """
    chain_a, chain_b = await _lineage(store, a_id), await _lineage(store, b_id)
    ancestor, shared = _split(chain_a, chain_b)
    a_record, b_record = chain_a[0][0], chain_b[0][0]
    prefix = await store.read_events(a_record.id, stop=shared + 1) if shared >= 0 else []
    a_events = await store.read_events(a_record.id, start=shared + 1)
    b_events = await store.read_events(b_record.id, start=shared + 1)
    a_turns, b_turns = fold_turns(a_events), fold_turns(b_events)
    return Comparison(
        a=_side(a_record, a_events),
        b=_side(b_record, b_events),
        ancestor_id=ancestor,
        shared_through_seq=shared,
        shared_turns=[view for view in fold_turns(prefix) if view.reason is not None],
        rows=align_turns(a_turns, b_turns),
    )


def _side(record: SessionRecord, events: Sequence[Event]) -> ComparedSide:
    return ComparedSide(id=record.id, label=record.label, turn_count=record.turn_count, totals=usage_totals(events))


Chain = list[tuple[SessionRecord, int | None]]
"""A session and its sources, each with the last of its seqs the first session still reads (None: all)."""


async def _lineage(store: BaseStore, session_id: str) -> Chain:
    record = await store.get_session(SessionId(session_id))
    chain: Chain = [(record, None)]
    limit: int | None = None
    while record.source_id is not None:
        cut = record.inherited - 1  # -1: a fork without inherited history shares nothing, but has an ancestor
        limit = cut if limit is None else min(limit, cut)
        try:
            record = await store.get_session(record.source_id)
        except NotFoundError:  # the source is gone: the prefix still reads, but lineage stops here
            break
        chain.append((record, limit))
    return chain


def _split(chain_a: Chain, chain_b: Chain) -> tuple[str | None, int]:
    """The nearest common session and the last seq both logs share through it."""
    limits_b = {record.id: limit for record, limit in chain_b}
    for record, limit_a in chain_a:
        if record.id in limits_b:
            limit_b = limits_b[record.id]
            bounds = [limit for limit in (limit_a, limit_b) if limit is not None]
            return record.id, min(bounds) if bounds else record.next_seq - 1
    return None, -1


def fold_turns(events: Iterable[Event]) -> list[TurnView]:
    """The turns among ``events`` (events before the first ``turn/start`` are skipped)."""
    views: list[TurnView] = []
    current: _TurnFold | None = None
    for event in events:
        if event.type == "turn/start":
            current = _TurnFold(event.data["turn"])
            views.append(current.view)
            continue
        if current is not None:
            current.absorb(event)
            views[-1] = current.view
    return views


class _TurnFold:
    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.user: str | None = None
        self.reply = ""
        self.reason: str | None = None
        self.model: str | None = None
        self.calls: dict[str, ToolCallView] = {}
        self.usage: list[Event] = []

    def absorb(self, event: Event) -> None:
        data = event.data
        if event.type == "user/message" and self.user is None:
            self.user = data["content"]
        elif event.type == "assistant/message":
            self.reply = data["content"] or self.reply
            self.model = data.get("model") or self.model
            for call in data.get("tool_calls") or ():
                self.calls[call["id"]] = ToolCallView(name=call["name"], arguments=call["arguments"])
        elif event.type == "tool/result" and data["call_id"] in self.calls:
            call = self.calls[data["call_id"]]
            self.calls[data["call_id"]] = ToolCallView(
                name=call.name, arguments=call.arguments, is_error=bool(data.get("is_error"))
            )
        elif event.type == "model/called":
            self.usage.append(event)
            self.model = data["model"] or self.model
        elif event.type == "turn/end":
            self.reason = data["reason"]

    @property
    def view(self) -> TurnView:
        return TurnView(
            turn=self.turn,
            user=self.user,
            reply=self.reply,
            reason=self.reason,
            model=self.model,
            tool_calls=list(self.calls.values()),
            usage=usage_totals(self.usage),
        )


def align_turns(a: Sequence[TurnView], b: Sequence[TurnView]) -> list[TurnRow]:
    """Rows by turn number, in order; a side without that turn is None."""
    by_a, by_b = {view.turn: view for view in a}, {view.turn: view for view in b}
    rows = []
    for turn in sorted(by_a.keys() | by_b.keys()):
        left, right = by_a.get(turn), by_b.get(turn)
        rows.append(
            TurnRow(
                turn=turn,
                a=left,
                b=right,
                tools_differ=_calls(left) != _calls(right),
                replies_differ=(left.reply if left else None) != (right.reply if right else None),
            )
        )
    return rows


def _calls(view: TurnView | None) -> list[tuple[str, str]] | None:
    return None if view is None else [(call.name, call.arguments) for call in view.tool_calls]
