"""Signals between the processes sharing a store: "this session's log grew" and application messages.

A signal only wakes; the log stays the truth. Whoever receives a signal rereads what it needs from the store
(from the last seq it saw), so a lost signal costs latency, never data. Every subscriber is told when signals
may have been lost (its queue overflowed, or the connection that carries them was re-established) by a
`RESYNC` message, and should then reread.

Within one process (`LocalSignals`, the default of every store) a signal is a queue put. PostgreSQL carries
them between processes with ``LISTEN``/``NOTIFY`` (`stellate.store.pg_signals`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Final, Protocol, runtime_checkable

__all__ = [
    "LOG_CHANNEL",
    "MAX_PAYLOAD",
    "RESYNC",
    "LocalSignals",
    "Reassembler",
    "Signals",
    "Subscription",
    "fragments",
    "log_payload",
    "parse_log_payload",
]

LOG_CHANNEL: Final = "log"
"""Published by every append: ``"<session id> <next seq>"``."""
RESYNC: Final = "\x00resync"
"""Delivered to every subscriber when signals may have been lost: reread from the store."""
MAX_PAYLOAD: Final = 7000
"""Longest payload sent in one piece (PostgreSQL refuses notifications over 8,000 bytes); longer ones are split."""
_QUEUE_SIZE = 10_000


def log_payload(session_id: str, next_seq: int) -> str:
    """The payload of a `LOG_CHANNEL` signal."""
    return f"{session_id} {next_seq}"


def parse_log_payload(payload: str) -> tuple[str, int] | None:
    """``(session id, next seq)`` of a `LOG_CHANNEL` payload, or None for `RESYNC` or a malformed one."""
    session_id, _, seq = payload.rpartition(" ")
    return (session_id, int(seq)) if session_id and seq.isdigit() else None


class Subscription:
    """Payloads of the channels subscribed to, in the order they arrived; iterate, and `close` when done."""

    def __init__(self, owner: LocalSignals, channels: frozenset[str]) -> None:
        self.channels = channels
        self._owner = owner
        self._queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue(_QUEUE_SIZE)

    def deliver(self, channel: str, payload: str) -> None:
        """Queue a payload; on overflow, drop the backlog and queue a `RESYNC` instead."""
        if self._queue.full():
            while not self._queue.empty():
                self._queue.get_nowait()
            channel, payload = "", RESYNC
        self._queue.put_nowait((channel, payload))

    async def get(self) -> tuple[str, str]:
        """The next ``(channel, payload)``; ``payload`` is `RESYNC` when signals may have been lost."""
        return await self._queue.get()

    def __aiter__(self) -> AsyncIterator[tuple[str, str]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[tuple[str, str]]:
        while True:
            yield await self.get()

    def close(self) -> None:
        """Stop receiving."""
        self._owner.unsubscribe(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class Signals(Protocol):
    """Publish short text payloads on named channels to every process sharing the store (this one included)."""

    async def publish(self, channel: str, payloads: Iterable[str]) -> None:
        """Send payloads, in order, to every subscriber of ``channel``; each at most `MAX_PAYLOAD` bytes."""
        ...

    async def subscribe(self, channels: Iterable[str]) -> Subscription:
        """Start receiving ``channels``; ready when it returns (nothing published after is missed)."""
        ...

    async def close(self) -> None:
        """Stop delivering and release what carries the signals."""
        ...


class LocalSignals:
    """Signals within one process: what a store that no other process shares (memory, SQLite) uses."""

    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    async def publish(self, channel: str, payloads: Iterable[str]) -> None:
        """Deliver each payload to every subscriber of ``channel`` in this process."""
        self.deliver(channel, payloads)

    def deliver(self, channel: str, payloads: Iterable[str]) -> None:
        """Hand payloads to the local subscribers of ``channel``."""
        for payload in payloads:
            for subscription in list(self._subscriptions):
                if channel in subscription.channels:
                    subscription.deliver(channel, payload)

    def resync(self) -> None:
        """Tell every subscriber that signals may have been lost."""
        for subscription in list(self._subscriptions):
            subscription.deliver("", RESYNC)

    async def subscribe(self, channels: Iterable[str]) -> Subscription:
        """Receive ``channels`` from now on."""
        subscription = Subscription(self, frozenset(channels))
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop delivering to ``subscription``."""
        self._subscriptions.discard(subscription)

    async def close(self) -> None:
        """Drop every subscriber."""
        self._subscriptions.clear()


def fragments(message: str, *, limit: int = MAX_PAYLOAD) -> list[str]:
    """``message`` as payloads of at most ``limit`` bytes: itself when short, else numbered fragments.

    A fragment is a SOH character, then ``<id> <index> <count> <piece>``; `Reassembler` puts them back
    together. Send the fragments of one message together (one `Signals.publish` call), so they arrive in order.
    """
    if len(message.encode()) <= limit and not message.startswith("\x01"):
        return [message]
    piece = max(1, (limit - 64) // 4)  # characters per fragment: 4 bytes each at most in UTF-8
    parts = [message[i : i + piece] for i in range(0, len(message), piece)] or [""]
    tag = uuid.uuid4().hex[:12]
    return [f"\x01{tag} {i} {len(parts)} {part}" for i, part in enumerate(parts)]


class Reassembler:
    """Puts fragmented payloads back together; whole payloads pass straight through."""

    def __init__(self, *, max_pending: int = 256) -> None:
        self._pending: dict[str, list[str]] = {}
        self._max_pending = max_pending

    def add(self, payload: str) -> str | None:
        """The whole message once complete (at once for an unfragmented payload), else None."""
        if not payload.startswith("\x01"):
            return payload
        tag, index, count, piece = payload[1:].split(" ", 3)
        parts = self._pending.setdefault(tag, [])
        if int(index) != len(parts):  # a fragment was lost: drop the message (a RESYNC follows any loss)
            self._pending.pop(tag, None)
            return None
        parts.append(piece)
        if len(parts) < int(count):
            if len(self._pending) > self._max_pending:
                self._pending.pop(next(iter(self._pending)))
            return None
        del self._pending[tag]
        return "".join(parts)
