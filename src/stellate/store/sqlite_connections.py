"""The SQLite store's two connections: short calls on the event loop's own, the rest on one store thread.

A call that may wait runs on one dedicated thread with its own connection, so the event loop never waits for
another process's lock, an fsync or a large read. A short call (an append, a lease or claim, one session's
record) runs on the loop's own connection instead when SQLite can serve it at once: that connection never
waits (``busy_timeout = 0``), so when another connection holds the write lock the call is rolled back
untouched and goes to the thread, which waits its turn. A hand-off to a thread costs about as much as the SQL of
a whole turn, which is why the short path exists. With ``synchronous=FULL`` every commit waits for the disk, so
writes always go through the thread there. And the loop's connection never checkpoints the WAL (that writes and
syncs the database file): every so many of its writes, one goes through the thread instead, followed by a
checkpoint, as SQLite's automatic checkpoint follows a commit.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeAlias, TypeVar

from stellate.errors import ConflictError, StoreError

__all__ = ["SqliteConnections", "Synchronous", "WriteTransaction", "closed_error", "translate"]

T = TypeVar("T")
_log = logging.getLogger(__name__)

Synchronous: TypeAlias = Literal["NORMAL", "FULL"]
"""SQLite's ``synchronous`` setting in WAL mode: what a committed write survives (docs/store.md)."""

_CHECKPOINT_EVERY = 400
"""Writes on the loop's connection between two checkpoints on the thread (about SQLite's own 1,000 WAL pages)."""


class SqliteConnections:
    """One file's connections for one store: the loop's (for short calls) and the store thread's.

    Args:
        path: The database file (``:memory:`` has no loop connection: each connection would be a database of
            its own).
        busy_timeout_ms: How long the thread's connection waits for another process's write lock.
        synchronous: ``NORMAL`` or ``FULL``.
    """

    def __init__(self, path: str, *, busy_timeout_ms: int, synchronous: Synchronous) -> None:
        self.path = path
        self.synchronous: Synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stellate-sqlite")
        self._thread_conn: sqlite3.Connection | None = None
        self.loop_conn: sqlite3.Connection | None = None
        """The event loop's connection for short calls, once opened (never for ``:memory:``)."""
        self._loop_thread = 0
        """The thread that opened the loop's connection: calls from any other thread go through the store thread."""
        self._loop_writes = 0
        self._closed = False

    def open_loop_connection(self) -> sqlite3.Connection | None:
        """Open the loop's connection if there is none yet; None for ``:memory:`` or while the file is locked.

        Without it every call goes through the thread: slower, never wrong.
        """
        if self.loop_conn is None and self.path != ":memory:":
            try:
                self.loop_conn = self.connect(busy_timeout_ms=0)
                self._loop_thread = threading.get_ident()
            except ConflictError as exc:  # another process is creating or converting the file right now
                if exc.code != "store_locked":
                    raise
        return self.loop_conn

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(connection, *args)`` on the store thread (connected on first use)."""
        loop = asyncio.get_running_loop()
        try:
            future = loop.run_in_executor(self._executor, self._on_thread, fn, *args)
        except RuntimeError as exc:  # the thread is gone: the store was closed
            raise closed_error() from exc
        return await future

    async def run_short(self, fn: Callable[..., T], *args: Any, writes: bool = True) -> T:
        """Run ``fn(connection, *args)`` on the loop's connection if SQLite serves it at once, else on the thread.

        A call refused for a lock held elsewhere was rolled back whole, so running it again on the thread (which
        waits up to the busy timeout) is safe.
        """
        conn = self.loop_conn
        if conn is None or (writes and self.synchronous == "FULL") or threading.get_ident() != self._loop_thread:
            return await self.run(fn, *args)  # another thread's event loop shares the store: the thread serializes
        if writes and self._loop_writes >= _CHECKPOINT_EVERY:
            self._loop_writes = 0
            return await self.run(_then_checkpoint, fn, *args)
        try:
            result = fn(conn, *args)
        except ConflictError as exc:
            if exc.code != "store_locked":
                raise
            return await self.run(fn, *args)
        self._loop_writes += writes
        return result

    def connect(self, *, busy_timeout_ms: int) -> sqlite3.Connection:
        """A new connection in WAL mode with this store's settings."""
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if busy_timeout_ms == 0:  # the loop's connection: the store thread checkpoints instead
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            # Freed cells are zeroed at least where that costs no extra I/O (FAST; some builds default to ON): a
            # slot overwritten long before an erase (an old memory) leaves no bytes in its page.
            if conn.execute("PRAGMA secure_delete").fetchone()[0] == 0:
                conn.execute("PRAGMA secure_delete = FAST")
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise translate(exc, f"cannot open SQLite store {self.path!r}") from exc
        return conn

    async def close(self) -> None:
        """Close both connections and stop the thread; safe to call twice."""
        self._closed = True
        if self.loop_conn is not None:
            loop_conn, self.loop_conn = self.loop_conn, None
            loop_conn.close()
        if self._thread_conn is not None:
            conn, self._thread_conn = self._thread_conn, None
            await asyncio.get_running_loop().run_in_executor(self._executor, conn.close)
        self._executor.shutdown(wait=False)

    def _on_thread(self, fn: Callable[..., T], *args: Any) -> T:
        if self._thread_conn is None:  # connected on first use: many processes never need the thread
            if self._closed:
                raise closed_error()
            self._thread_conn = self.connect(busy_timeout_ms=self._busy_timeout_ms)
        return fn(self._thread_conn, *args)


class WriteTransaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error, with sqlite errors translated."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate(exc, "cannot start a write") from exc

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc_type is None:
            try:
                self._conn.execute("COMMIT")
                return
            except sqlite3.Error as commit_exc:
                self._conn.execute("ROLLBACK")
                raise translate(commit_exc, "commit failed") from commit_exc
        self._conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise translate(exc, "write failed") from exc


def closed_error() -> StoreError:
    """The error of a call on a closed store."""
    return StoreError("the store is closed; open it with `await SqliteStore.open(url)`", code="store_closed")


def translate(exc: sqlite3.Error, what: str) -> StoreError:
    """A stellate error for an sqlite3 one: a lock held elsewhere is ``store_locked``, a key clash ``seq_conflict``."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return ConflictError(f"{what}: the SQLite file is locked by another process ({text})", code="store_locked")
    if isinstance(exc, sqlite3.IntegrityError):
        return ConflictError(f"{what}: {text}", code="seq_conflict")
    return StoreError(f"{what}: {text}")


def _then_checkpoint(db: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
    """``fn``, then a checkpoint of the WAL, as SQLite's own automatic one runs after a commit (on the thread).

    The caller awaits it, so no write of its own races the checkpoint, which can then copy the whole WAL back
    and let the next write start the file over.
    """
    result = fn(db, *args)
    try:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error as exc:  # derived work: the next checkpoint makes it up
        _log.debug("WAL checkpoint skipped: %s", exc)
    return result
