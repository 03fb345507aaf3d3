"""The event history: a bounded, ordered list of opaque JSON rows per space, kept in the store.

It backs the server's ``/v1/events`` (any worker resumes a client from its ``Last-Event-ID``) and the Events page.
The store knows nothing of what a row means: the layers above write JSON text with a ``kind`` to filter on.

Ids are per space, start at 1 and have no holes: each append takes the next ids under the space's head row, so
ids are given in commit order, and a reader that saw id ``n`` and reads id ``n + 2`` next knows ``n + 1`` was
pruned. The history is bounded (`HistoryBounds`): by count and by age, pruned as it grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

__all__ = [
    "HISTORY_CHANNEL",
    "EventHistory",
    "HistoryBounds",
    "HistoryEntry",
    "HistoryPage",
    "HistoryWindow",
    "LocalDelivery",
    "NewHistoryEntry",
    "history_payload",
    "parse_history_payload",
    "pick",
    "prune_due",
    "signal_locally",
]

HISTORY_CHANNEL: Final = "history"
"""Published by every history append: ``"<last id> <space>"``."""
PRUNE_EVERY: Final = 64
"""An append prunes when its ids cross a multiple of this: a delete per 64 rows, not per row."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryBounds:
    """How much history a space keeps; older rows are pruned as new ones arrive."""

    max_entries: int = 10_000
    """Rows kept per space (the newest)."""
    max_age_ms: int = 24 * 3600 * 1000
    """Rows older than this (epoch-ms age) are pruned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewHistoryEntry:
    """A row to append: its kind (for filtering) and its JSON text, stored as given."""

    kind: str
    """What the row is (an agent event's type, say); reads can filter on it."""
    data: str
    """JSON text, returned byte for byte."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    """A stored row of the history."""

    id: int
    """Orders the space's history: 1, 2, 3, ... in commit order, without holes."""
    time: int
    """Epoch milliseconds of the append."""
    kind: str
    """As appended."""
    data: str
    """As appended (JSON text)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryPage:
    """Some rows of a space's history, and its newest id when the read began."""

    entries: list[HistoryEntry]
    """In id order, oldest first."""
    last_id: int
    """The space's newest id (0 when it has none yet), read before the rows: every id up to it was appended."""


@runtime_checkable
class EventHistory(Protocol):
    """A store that keeps an event history (every shipped backend does)."""

    history_bounds: HistoryBounds
    """What the history keeps; the store prunes past it."""

    async def append_history(self, entries: Sequence[NewHistoryEntry]) -> list[HistoryEntry]:
        """Append rows to this space's history atomically, with the next ids; signals `HISTORY_CHANNEL`.

        Raises:
            StoreError: the store is unreachable; nothing was appended.
        """
        ...

    async def read_history(
        self,
        *,
        after: int | None = None,
        before: int | None = None,
        limit: int = 100,
        kinds: Sequence[str] | None = None,
    ) -> HistoryPage:
        """This space's rows with ``after < id < before`` (of ``kinds``, if given), in id order.

        With ``after``, the oldest ``limit`` of them; without it, the newest ``limit``.
        """
        ...


def history_payload(last_id: int, space: str) -> str:
    """The payload of a `HISTORY_CHANNEL` signal."""
    return f"{last_id} {space}"


def parse_history_payload(payload: str) -> tuple[int, str] | None:
    """``(last id, space)`` of a `HISTORY_CHANNEL` payload, or None for a `RESYNC` or malformed one."""
    last_id, _, space = payload.partition(" ")
    return (int(last_id), space) if last_id.isdigit() and space else None


def prune_due(last_id: int, count: int) -> bool:
    """Whether an append of ``count`` rows ending at ``last_id`` should prune (its ids crossed a multiple)."""
    return (last_id - count) // PRUNE_EVERY != last_id // PRUNE_EVERY


@runtime_checkable
class LocalDelivery(Protocol):
    """Signals that can hand a payload to this process's subscribers at once (`LocalSignals`, PostgreSQL's)."""

    def deliver(self, channel: str, payloads: Iterable[str]) -> None:
        """Hand payloads to the local subscribers of ``channel``."""
        ...


def signal_locally(signals: object, last_id: int, space: str) -> None:
    """Wake this process's history readers as the append returns (a ``NOTIFY`` reaches the other processes).

    Readers in this process so learn of the rows before anything the writer does next.
    """
    if isinstance(signals, LocalDelivery):
        signals.deliver(HISTORY_CHANNEL, [history_payload(last_id, space)])


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryWindow:
    """What a read may return: ``low < id < high`` and ``time >= min_time``.

    So the bounds hold exactly for readers, though rows are deleted only every `PRUNE_EVERY` ids.
    """

    low: int
    high: int
    min_time: int

    @classmethod
    def of(cls, after: int | None, before: int | None, last_id: int, now: int, bounds: HistoryBounds) -> HistoryWindow:
        """The window of a read with ``after`` and ``before`` when the space's newest id is ``last_id``."""
        low = max(-1 if after is None else after, last_id - bounds.max_entries)
        return cls(low=low, high=(1 << 62) if before is None else before, min_time=now - bounds.max_age_ms)


def pick(
    rows: Sequence[HistoryEntry], window: HistoryWindow, limit: int, kinds: Sequence[str] | None, *, newest: bool
) -> list[HistoryEntry]:
    """What `EventHistory.read_history` returns from a space's rows held in id order (the memory store's read)."""
    wanted = None if kinds is None else set(kinds)
    found = [
        e
        for e in rows
        if window.low < e.id < window.high and e.time >= window.min_time and (wanted is None or e.kind in wanted)
    ]
    if limit <= 0:
        return []
    return found[-limit:] if newest else found[:limit]
