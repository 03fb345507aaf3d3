"""Signals between processes through PostgreSQL ``LISTEN``/``NOTIFY``.

One listening connection per store, separate from the pool, receives every channel and fans payloads out to
this process's subscribers. When that connection drops (a restarted server, a network cut) the listener
reconnects with backoff and sends `RESYNC` to every subscriber: what was published meanwhile is reread from
the log, so nothing committed is missed. Channel names carry the store's schema, so deployments (and tests)
sharing one database never hear each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Iterable
from typing import Any, Protocol

import psycopg
from psycopg import sql

from stellate.errors import UsageError
from stellate.store.history import HISTORY_CHANNEL
from stellate.store.signals import LOG_CHANNEL, LocalSignals, Subscription

__all__ = ["CHANNELS", "Notifier", "PostgresSignals", "channel_name"]

CHANNELS = (LOG_CHANNEL, "events", HISTORY_CHANNEL)
"""Every channel a PostgreSQL store carries."""
_HEALTH_SECONDS = 5.0  # how often an idle listener checks that its connection still answers
_BACKOFF = (0.1, 0.2, 0.5, 1.0, 2.0)
_log = logging.getLogger(__name__)


def channel_name(schema: str | None, channel: str) -> str:
    """The PostgreSQL channel of ``channel`` for a store in ``schema`` (at most 63 bytes, as PostgreSQL allows)."""
    name = f"stellate.{schema or 'public'}.{channel}"
    if len(name.encode()) <= 63:
        return name
    return f"stellate.{hashlib.sha256((schema or '').encode()).hexdigest()[:16]}.{channel}"


class PostgresSignals:
    """`Signals` over ``LISTEN``/``NOTIFY``; created by `PostgresStore`, started by the first `subscribe`."""

    def __init__(self, url: str, schema: str | None, publisher: Notifier) -> None:
        self._url = url
        self._publisher = publisher
        self._local = LocalSignals()
        self._listener: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self.scope(schema)

    def scope(self, schema: str | None) -> None:
        """Carry the signals of the stores in ``schema`` (set by the store once it knows its schema)."""
        if self._listener is not None:
            raise UsageError("the signal listener already runs; scope the signals before the first subscribe")
        self.application_name = f"stellate signals {schema or 'public'}"[:63]
        """Names the listening connection in ``pg_stat_activity``."""
        self._names = {channel: channel_name(schema, channel) for channel in CHANNELS}
        self._channels = {name: channel for channel, name in self._names.items()}

    def name(self, channel: str) -> str:
        """The PostgreSQL channel name of ``channel``."""
        try:
            return self._names[channel]
        except KeyError:
            raise UsageError(f"unknown signal channel {channel!r}; use one of {list(CHANNELS)}") from None

    async def publish(self, channel: str, payloads: Iterable[str]) -> None:
        """Notify every process (this one included) in one transaction, so the payloads arrive in order."""
        batch = list(payloads)
        if batch:
            await self._publisher.notify(self.name(channel), batch)

    def deliver(self, channel: str, payloads: Iterable[str]) -> None:
        """Hand payloads to this process's subscribers of ``channel`` now (other processes hear the ``NOTIFY``)."""
        self._local.deliver(channel, payloads)

    async def subscribe(self, channels: Iterable[str]) -> Subscription:
        """Receive ``channels`` from every process; returns once the listener is listening."""
        wanted = frozenset(channels)
        for channel in wanted:
            self.name(channel)
        subscription = await self._local.subscribe(wanted)
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen(), name="stellate signals")
        await self._ready.wait()
        return subscription

    async def close(self) -> None:
        """Stop listening and drop every subscriber."""
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        await self._local.close()

    async def _listen(self) -> None:
        attempt = 0
        while True:
            try:
                connect = psycopg.AsyncConnection.connect
                async with await connect(self._url, autocommit=True, application_name=self.application_name) as conn:
                    for name in self._names.values():
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(name)))
                    if attempt:
                        self._local.resync()  # anything published while we were away is reread from the log
                    attempt = 0
                    self._ready.set()
                    await self._receive(conn)
            except (psycopg.Error, OSError) as exc:
                _log.warning("signal listener lost its connection (%s); reconnecting", exc)
                self._local.resync()
            attempt += 1
            await asyncio.sleep(_BACKOFF[min(attempt, len(_BACKOFF)) - 1])

    async def _receive(self, conn: psycopg.AsyncConnection[Any]) -> None:
        while True:
            async for notify in conn.notifies(timeout=_HEALTH_SECONDS):
                channel = self._channels.get(notify.channel)
                if channel is not None:
                    self._local.deliver(channel, [notify.payload])
            await conn.execute("SELECT 1")  # an idle spell: prove the connection is alive, or raise


class Notifier(Protocol):
    """What `PostgresSignals` needs from its store: a way to send notifications."""

    async def notify(self, channel: str, payloads: list[str]) -> None:
        """``NOTIFY channel`` with each payload, in order, in one transaction."""
        ...
