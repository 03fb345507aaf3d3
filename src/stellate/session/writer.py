"""The session's writes: stage events and commit them under the lease, or place slot events at the head.

A `Session` composes one `SessionWriter`, which owns the session's in-memory log (`History`) and keeps it
equal to the store. A turn's events are folded in as they are staged and committed in batches with an
expected-seq check; free-standing slot events (memory, insight, label...) written beside a turn are placed at
the head by the store in one statement (`write_free`) and never collide with anything. When a batch landed
after such events, or on any failed write, the history is reloaded from the store. `Turn` and the agent's fork
write through it; it is an internal surface: applications write through `Session` and `Agent`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from stellate.errors import ArchivedError, ConflictError, InvariantError, UsageError
from stellate.log.events import FREE_STANDING_TYPES, Event, NewEvent
from stellate.log.messages import Message
from stellate.session.history import History, load_history, store_new_segments
from stellate.session.lease import LeaseHolder
from stellate.store.base import BaseStore
from stellate.store.types import SessionRecord

__all__ = ["REBASE_SECONDS", "SessionWriter"]

REBASE_SECONDS = 10.0
"""How long a batch refused for a stale head is replayed on the new one before the conflict is raised.

Only a writer without the lease can meet one (a holder's batch lands after free-standing events by itself)."""


class SessionWriter:
    """One session's write path, and the in-memory log that its writes keep in step with the store.

    Args:
        store: The store holding the session.
        record: The session's record as read.
        history: The session's log as folded from ``record``.
        lease: The session's lease, as this writer holds it (taken by `Session.hold`).
        weigh: Token estimate of one message, for histories reloaded from the store (named by the history's
            ``weigh_key`` in stored fold segments, which follows the session's counter).
    """

    def __init__(
        self,
        store: BaseStore,
        record: SessionRecord,
        history: History,
        lease: LeaseHolder,
        *,
        weigh: Callable[[Message], int],
    ) -> None:
        self.store = store
        self.record = record
        """Identity and lineage as stored (slots and cursor live in `history`)."""
        self.history = history
        """The session's log as folded in memory, staged events included."""
        self.lease = lease
        self._id = record.id
        self._weigh = weigh
        self._pending: list[NewEvent] = []
        self._flush_lock = asyncio.Lock()
        self._stale = False
        """A failed write could not be followed by a read of the store: the history may differ from it."""

    @property
    def has_pending(self) -> bool:
        """Whether staged events still wait for `flush`."""
        return bool(self._pending)

    def check_writable(self) -> None:
        """Refuse to write to an archived session.

        Raises:
            ArchivedError: the session is archived.
        """
        if self.history.slots.status == "archived":
            raise ArchivedError(f"session {self._id} is archived and read-only", session_id=self._id)

    async def write(self, events: list[NewEvent], *, check_writable: bool = True) -> None:
        """Stage ``events`` and commit them now (with ``check_writable``, refused on an archived session)."""
        if check_writable:
            self.check_writable()
        self.stage(events)
        await self.flush()

    async def write_free(self, events: Sequence[NewEvent], *, check_writable: bool = True) -> list[Event]:
        """Append free-standing slot events at the head, beside whatever else writes the session.

        The store places them in one statement, wherever the head is: they never wait for a turn running here
        or elsewhere, and never meet a conflict. An idle writer folds them in (with anything else that landed
        before them); while a turn holds this writer, its next batch lands after them and reloads the history.

        Returns:
            The events as stored, with their seqs.

        Raises:
            UsageError: an event is not free-standing.
            ArchivedError: the session is archived (with ``check_writable``).
        """
        if not all(e.type in FREE_STANDING_TYPES for e in events):
            raise UsageError("write_free takes free-standing slot events only")
        if check_writable:
            self.check_writable()
        written = await self.store.append(self._id, events)
        async with self._flush_lock:
            idle = self.lease.current is None and not self._pending and not self._stale
            if idle and written and written[0].seq == self.history.next_seq:
                self.history.absorb(written)  # nothing else landed first: no read
            elif idle and written and written[-1].seq >= self.history.next_seq:
                self.history.absorb(await self.store.read_events(self._id, start=self.history.next_seq))
        return written

    def stage(self, events: Sequence[NewEvent]) -> None:
        """Number ``events`` after the log, fold them into the history now, and queue them for the store."""
        seq = self.history.next_seq
        numbered = [
            Event(seq=seq + i, type=e.type, time=e.time, data=e.data, ignorable=e.ignorable)
            for i, e in enumerate(events)
        ]
        self.history.absorb(numbered)
        self._pending.extend(events)

    async def flush(self, *, closing_turn: bool = False) -> None:
        """Commit staged events in order.

        A batch that the store placed after free-standing events others wrote meanwhile reloads the history
        (its seqs moved); a conflict with another writer replays the batch on the new head for up to
        `REBASE_SECONDS`. On any failure the history is reloaded from the store (or marked stale when the store
        cannot be read), so it never keeps events the store did not take.

        Args:
            closing_turn: The batch closes a turn; when the lease was taken for that turn alone, the same
                transaction gives it back.
        """
        async with self._flush_lock:
            if not self._pending:
                return
            batch, self._pending = self._pending, []
            release = closing_turn and self.lease.ends_with_turn
            try:
                moved = await self._append(batch, release)
            except ConflictError as exc:
                if exc.code != "seq_conflict":  # busy, lease lost, file locked: retrying here would only wait again
                    await self._reload()
                    raise
                await self._rebase(batch, release)
                moved = False
            except BaseException:
                await self._reload()
                raise
            if release:
                self.lease.released()
            if moved:
                await self._reload()
            await store_new_segments(self.store, self._id, self.history)

    async def ensure_current(self) -> None:
        """Reload the history if a failed write left it possibly unlike the store (the store was unreachable).

        Raises:
            StoreError: the store still cannot be read.
        """
        async with self._flush_lock:
            if self._stale:
                await self._reload()

    async def catch_up(self, record: SessionRecord) -> None:
        """Under a fresh lease: repair a dead writer's open turn, then read what others appended meanwhile.

        Args:
            record: The session's record as of the lease's grant.
        """
        # Nobody else holds the lease, so whoever opened this turn is gone (unless it paused it for approvals).
        if record.cursor.turn_open and not record.cursor.paused:
            await self.store.repair(self._id, lease=self.lease.current)
            record = await self.store.get_session(self._id)
        async with self._flush_lock:  # never beside `write_free` folding in the same events
            if record.next_seq < self.history.next_seq or self._pending or self._stale:
                await self._reload()
            elif record.next_seq > self.history.next_seq:
                self.history.absorb(await self.store.read_events(self._id, start=self.history.next_seq))

    async def refresh(self) -> None:
        """Catch up with events other writers appended since this writer last wrote (no lease needed)."""
        async with self._flush_lock:
            if self._stale:
                await self._reload()
                return
            record = await self.store.get_session(self._id)
            if record.next_seq > self.history.next_seq and not self._pending:
                self.history.absorb(await self.store.read_events(self._id, start=self.history.next_seq))

    async def _append(self, batch: list[NewEvent], release: bool) -> bool:
        """Append ``batch``, the last staged events, under this session's lease; whether its seqs moved."""
        first = self.history.next_seq - len(batch)
        lease = self.lease.current
        written = await self.store.append(
            self._id, batch, expected_seq=first, lease=lease, release_lease=release and bool(lease)
        )
        return bool(written) and written[0].seq != first

    async def _rebase(self, batch: list[NewEvent], release: bool) -> None:
        """Replay a refused batch after the events another writer added, until it lands or time runs out."""
        deadline = time.monotonic() + REBASE_SECONDS
        while True:
            await self._reload()
            try:
                self.stage(batch)
            except InvariantError as exc:  # planned on a log the store does not have: it no longer fits
                await self._reload()
                raise ConflictError(
                    f"session {self._id} changed under this writer; its batch no longer fits the log",
                    session_id=self._id,
                ) from exc
            self._pending = []
            try:
                if await self._append(batch, release):
                    await self._reload()
                return
            except ConflictError as exc:
                if exc.code != "seq_conflict" or time.monotonic() >= deadline:
                    await self._reload()
                    raise
            except BaseException:
                await self._reload()
                raise
            await asyncio.sleep(0.005)

    async def _reload(self) -> None:
        # Until the store has been read, the history may hold events the store never took; when the read fails
        # too (the store is down) the next turn or `refresh` reloads in full rather than trust it by its length.
        self._pending, self._stale = [], True
        record = await self.store.get_session(self._id)
        history = await load_history(self.store, record, weigh=self._weigh, weigh_key=self.history.weigh_key)
        self.record, self.history, self._stale = record, history, False
