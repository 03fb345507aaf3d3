"""The export's read path: a session's events as JSONL lines, made from the stored JSON text where there is one.

SQLite keeps each event's ``data`` as the compact JSON text `validate_event` made of it, which is exactly how the
export encodes it: a line is spliced around that text without decoding and re-encoding it (issue 22, goal 6: the
two JSON passes were most of an export's cost). A backend that hands back decoded data (PostgreSQL's ``jsonb``)
gets its events encoded as `Event.to_json` says; the lines are byte for byte the same either way.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from stellate.store._sql import select_events_sql
from stellate.store.base import BaseStore
from stellate.store.types import SessionId

__all__ = ["event_lines", "image_data"]

_SELECT = select_events_sql(placeholder="?", types=None, reverse=False, limit=None)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _spliced(rows: Sequence[Sequence[Any]]) -> list[str]:
    """``{"seq":..,"type":..,"time":..,"data":..[,"ignorable":true]}`` lines, as `Event.to_json` encoded compactly."""
    types: dict[str, str] = {}
    out: list[str] = []
    for seq, kind, stamp, data, flag in rows:
        name = types.get(kind) or types.setdefault(kind, _dumps(kind))
        tail = ',"ignorable":true}\n' if flag else "}\n"
        out.append(f'{{"seq":{seq},"type":{name},"time":{stamp},"data":{data}{tail}')
    return out


def _raw_store(store: BaseStore) -> Any:
    """The store when it keeps event data as JSON text that can be read raw (SQLite), else None."""
    from stellate.store.sqlite import SqliteStore

    return store if isinstance(store, SqliteStore) else None


_Parts = list[tuple[SessionId, int, int]]


async def _raw_parts(store: BaseStore, session_id: SessionId, start: int, stop: int) -> _Parts:
    return [(sid, lo, hi) for sid, lo, hi in await store._segments(session_id, max(start, 0), stop) if lo < hi]


def _select(db: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    from stellate.store.sqlite_connections import translate

    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, "read failed") from exc


def _lines_sync(db: sqlite3.Connection, parts: Sequence[tuple[SessionId, int, int]]) -> list[list[str]]:
    return [_spliced(_select(db, _SELECT, part)) for part in parts]


async def event_lines(store: BaseStore, session_id: SessionId, start: int, stop: int) -> list[str]:
    """The export lines of the events ``start <= seq < stop`` of the session's whole log, in order.

    Raises:
        NotFoundError: unknown session.
    """
    raw = _raw_store(store)
    if raw is None:
        events = await store.read_events(session_id, start=start, stop=stop)
        return [_dumps(e.to_json()) + "\n" for e in events]
    parts = await _raw_parts(store, session_id, start, stop)
    found = await raw._run(_lines_sync, parts)
    if any(not lines and sid != session_id for lines, (sid, _, _) in zip(found, parts, strict=True)):
        if await store._lineage_went_stale(parts):  # a source erased meanwhile: read the chain again
            return await event_lines(store, session_id, start, stop)
    return [line for lines in found for line in lines]


def _data_sync(db: sqlite3.Connection, parts: Sequence[tuple[SessionId, int, int]], types: Sequence[str]) -> list[str]:
    sql = select_events_sql(placeholder="?", types=types, reverse=False, limit=None)
    return [row[3] for part in parts for row in _select(db, sql, (*part, *types))]


async def image_data(store: BaseStore, session_id: SessionId, stop: int, types: Sequence[str]) -> list[Any]:
    """The ``data`` of the session's events of ``types`` that may refer to a blob: JSON text (SQLite) or objects.

    Only events whose text names a ``sha256`` are returned from SQLite, undecoded: most messages carry no image.
    """
    raw = _raw_store(store)
    if raw is None:
        return [e.data for e in await store.read_events(session_id, stop=stop, types=types)]
    parts = await _raw_parts(store, session_id, 0, stop)
    texts: list[str] = await raw._run(_data_sync, parts, types)
    return [text for text in texts if '"sha256"' in text]
