"""A store's presence in PostgreSQL: a session-level advisory lock that dies with the store's database session.

Each `PostgresStore` that takes leases keeps one extra connection holding ``pg_advisory_lock(key)`` for a random
key, and tags its lease tokens with that key. Another worker, on any host, that finds such a lease can ask
whether the lock is still held: when it can take the lock itself, the holder's database session is gone (its
process died, or its host lost the network) and the lease is broken at once instead of lapsing after its ttl.

A holder whose presence connection drops while its process lives (the database restarted, say) may lose its
leases this way; its next write is then refused (``lease_lost``) and nothing it wrote before is touched.
"""

from __future__ import annotations

import contextlib
import re
import secrets

import psycopg

__all__ = ["GONE_SQL", "Presence", "presence_key"]

GONE_SQL = "SELECT CASE WHEN pg_try_advisory_lock(%s) THEN pg_advisory_unlock(%s) ELSE false END"
"""True when nobody holds the presence lock of the key (taken and given back at once, in one statement)."""

_TAG = re.compile(r"~pg(\d{1,19})$")


def presence_key(token: str) -> int | None:
    """The presence key a lease token carries (``<random>~pg<key>[.<process stamp>]``), or None."""
    found = _TAG.search(token.partition(".")[0])
    return int(found.group(1)) if found else None


class Presence:
    """The presence connection of one store (opened at the first lease, reopened when it dropped)."""

    def __init__(self, url: str) -> None:
        self.key = secrets.randbits(62) + 1
        self._url = url
        self.application_name = f"stellate presence {self.key}"
        """Names the presence connection in ``pg_stat_activity``."""
        self._conn: psycopg.AsyncConnection[object] | None = None

    async def tag(self) -> str:
        """``~pg<key>`` while the presence lock is held; empty when it cannot be (the lease then has no tag)."""
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return f"~pg{self.key}"
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, application_name=self.application_name, connect_timeout=5
            )
            await conn.execute("SELECT pg_advisory_lock(%s)", (self.key,))
        except psycopg.Error:
            return ""  # no tag: this store's leases are judged by their ttl (and the holder's pid) alone
        self._conn = conn
        return f"~pg{self.key}"

    async def close(self) -> None:
        """Close the connection (which releases the lock)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()
