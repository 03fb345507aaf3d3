"""The session's writes: stage events, commit them under the lease, rebase once on a stale head.

A `Session` composes one `SessionWriter`, which owns the session's in-memory log (`History`) and keeps it
equal to the store: events are folded in as they are staged, committed in batches with an expected-seq check,
and on any failed write the history is reloaded from the store. `Turn` and the agent's fork write through it;
it is an internal surface: applications write through `Session` and `Agent`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from stellate.errors import ArchivedError, ConflictError
from stellate.log.events import Event, NewEvent
from stellate.log.messages import Message
from stellate.session.history import History, load_history, store_new_segments
from stellate.session.lease import LeaseHolder
from stellate.store.base import BaseStore
from stellate.store.types import SessionRecord

__all__ = ["SessionWriter"]


class SessionWriter:
    """One session's write path, and the in-memory log that its writes keep in step with the store.

    Args:
        store: The store holding the session.
        record: The session's record as read.
        history: The session's log as folded from ``record``.
        lease: The session's lease, as this writer holds it (taken by `Session.hold`).
        weigh: Token estimate of one message, for histories reloaded from the store.
        weigh_key: Names ``weigh`` in stored fold segments.
    """

    def __init__(
        self,
        store: BaseStore,
        record: SessionRecord,
        history: History,
        lease: LeaseHolder,
        *,
        weigh: Callable[[Message], int],
        weigh_key: str,
    ) -> None:
        self.store = store
        self.record = record
        """Identity and lineage as stored (slots and cursor live in `history`)."""
        self.history = history
        """The session's log as folded in memory, staged events included."""
        self.lease = lease
        self._id = record.id
        self._weigh = weigh
        self._weigh_key = weigh_key
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
        """Commit staged events in order; on a conflict with another writer, rebase them once and retry.

        On any failure the history is reloaded from the store (or marked stale when the store cannot be read),
        so it never keeps events the store did not take.

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
                await self._append(batch, release)
            except ConflictError as exc:
                if exc.code != "seq_conflict":  # busy, lease lost, file locked: retrying here would only wait again
                    await self._reload()
                    raise
                await self._rebase(batch, release)
            except BaseException:
                await self._reload()
                raise
            if release:
                self.lease.released()
            await store_new_segments(self.store, self._id, self.history)

    async def catch_up(self, record: SessionRecord) -> None:
        """Under a fresh lease: repair a dead writer's open turn, then read what others appended meanwhile.

        Args:
            record: The session's record as of the lease's grant.
        """
        if record.cursor.turn_open:  # nobody else holds the lease, so whoever opened this turn is gone
            await self.store.repair(self._id, lease=self.lease.current)
            record = await self.store.get_session(self._id)
        if record.next_seq < self.history.next_seq or self._pending or self._stale:
            await self._reload()
        elif record.next_seq > self.history.next_seq:
            self.history.absorb(await self.store.read_events(self._id, start=self.history.next_seq))

    async def refresh(self) -> None:
        """Catch up with events other writers appended since this writer last wrote (no lease needed)."""
        if self._stale:
            await self._reload()
            return
        record = await self.store.get_session(self._id)
        if record.next_seq > self.history.next_seq and not self._pending:
            self.history.absorb(await self.store.read_events(self._id, start=self.history.next_seq))

    async def _append(self, batch: list[NewEvent], release: bool) -> None:
        """Append ``batch``, the last staged events, under this session's lease."""
        first = self.history.next_seq - len(batch)
        lease = self.lease.current
        await self.store.append(self._id, batch, expected_seq=first, lease=lease, release_lease=release and bool(lease))

    async def _rebase(self, batch: list[NewEvent], release: bool) -> None:
        """Replay a refused batch after events another writer added.

        Only free-standing slot events can land inside a turn this session holds, so the batch still fits.
        """
        await self._reload()
        self.stage(batch)
        self._pending = []
        try:
            await self._append(batch, release)
        except BaseException:
            await self._reload()
            raise

    async def _reload(self) -> None:
        # Until the store has been read, the history may hold events the store never took; when the read fails
        # too (the store is down) the next turn or `refresh` reloads in full rather than trust it by its length.
        self._pending, self._stale = [], True
        record = await self.store.get_session(self._id)
        history = await load_history(self.store, record, weigh=self._weigh, weigh_key=self._weigh_key)
        self.record, self.history, self._stale = record, history, False
