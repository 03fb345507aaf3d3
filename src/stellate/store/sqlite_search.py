"""SQLite's message search: an FTS5 trigram index kept in step with appends, in the append's own transaction.

``search_rows`` maps an index rowid to the message it indexes (session, seq, turn); ``search_text`` is a
*contentless* FTS5 table (``content=''``) with the trigram tokenizer, so the text is stored once, in ``events``,
and any substring of three characters or more is found, Chinese included. Terms shorter than three characters
(``日本``, ``AI``) have no trigram: they are matched with ``LIKE`` over the candidate messages (a scan when every
term is short). Snippets are cut from the event's text (`stellate.store.search.make_snippet`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from stellate.store._batch import PlannedAppend
from stellate.store.search import SearchPage, SearchQuery, hit_of, indexed_messages, page_of, turn_before
from stellate.store.sqlite_connections import translate
from stellate.store.types import SessionId

__all__ = [
    "SEARCH_ERASERS",
    "SEARCH_MIGRATION",
    "delete_search_rows",
    "index_copied",
    "index_planned",
    "scrub_search_text",
    "search_sync",
]

_TYPES = "('user/message', 'assistant/message')"
_CONTENT = "json_extract(e.data, '$.content')"

_TURN_OF_E = """COALESCE((
        SELECT json_extract(t.data, '$.turn') FROM events t
        WHERE t.session_id = e.session_id AND t.seq < e.seq AND t.type = 'turn/start'
        ORDER BY t.seq DESC LIMIT 1), 0)"""
_ROWS_OF = f"""INSERT INTO search_rows (session_id, seq, turn)
    SELECT e.session_id, e.seq, {_TURN_OF_E} FROM events e
    WHERE e.type IN {_TYPES} AND COALESCE({_CONTENT}, '') != ''"""
_TEXT_OF = f"""INSERT INTO search_text (rowid, body)
    SELECT r.id, {_CONTENT} FROM search_rows r JOIN events e ON e.session_id = r.session_id AND e.seq = r.seq"""

#: Creates the index and fills it from the messages already stored (no ``;`` inside a statement: the
#: migration runner splits on it).
SEARCH_MIGRATION = f"""
CREATE TABLE search_rows (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE VIRTUAL TABLE search_text USING fts5(body, content='', tokenize='trigram');
{_ROWS_OF} ORDER BY e.session_id, e.seq;
{_TEXT_OF}
"""

#: What an erase runs per erased session (its id the one parameter), *before* its events are deleted: a
#: contentless FTS5 row is deleted by giving its text back, read from ``events`` (`delete_search_rows`).
SEARCH_ERASERS: tuple[str, ...] = (
    "INSERT INTO search_text (search_text, rowid, body)"
    f" SELECT 'delete', r.id, {_CONTENT} FROM search_rows r"
    " JOIN events e ON e.session_id = r.session_id AND e.seq = r.seq WHERE r.session_id = ?",
    "DELETE FROM search_rows WHERE session_id = ?",
)
_COPIED_ROWS = f"{_ROWS_OF} AND e.session_id = ? AND e.seq >= ? AND e.seq < ? ORDER BY e.seq"
_COPIED_TEXT = f"{_TEXT_OF} WHERE r.session_id = ? AND r.seq >= ? AND r.seq < ?"

_INSERT_ROW = "INSERT INTO search_rows (session_id, seq, turn) VALUES (?, ?, ?)"
_INSERT_TEXT = "INSERT INTO search_text (rowid, body) VALUES (?, ?)"
_FTS_MIN = 3
"""The trigram tokenizer indexes runs of three characters: shorter terms cannot be looked up in it."""


def index_planned(db: sqlite3.Connection, session_id: SessionId, planned: PlannedAppend) -> None:
    """Index the messages of a batch being written, on the connection (and in the transaction) writing it."""
    for event, turn in indexed_messages(planned.events, turn_before(planned)):
        rowid = db.execute(_INSERT_ROW, (session_id, event.seq, turn)).lastrowid
        db.execute(_INSERT_TEXT, (rowid, event.data["content"]))


def delete_search_rows(db: sqlite3.Connection, session_ids: Iterable[str]) -> int:
    """Remove these sessions' messages from the index, in the caller's transaction; returns how many.

    Call it *before* deleting the sessions' events (`SEARCH_ERASERS`, which an erase runs, does the same).
    """
    removed = 0
    for session_id in session_ids:
        for statement in SEARCH_ERASERS:
            changed = db.execute(statement, (session_id,)).rowcount
        removed += changed  # the second statement's count: the rows it removed
    scrub_search_text(db)
    return removed


def scrub_search_text(db: sqlite3.Connection) -> None:
    """Merge the FTS5 index into one segment, dropping what deleted rows left in it, in the caller's transaction.

    A contentless delete only adds a delete marker: the deleted message's trigrams (with their positions, from
    which the text could be rebuilt) stay in older segments until a merge. An erase runs this once, after its
    deletes and under ``secure_delete``, so they are gone from the file. It rewrites the whole index: a cost paid
    per erase, not per append.
    """
    db.execute("INSERT INTO search_text (search_text) VALUES ('optimize')")


def index_copied(db: sqlite3.Connection, session_id: str, start: int, stop: int) -> None:
    """Index a session's events ``start <= seq < stop`` just copied into it (an erase keeping a dependent)."""
    db.execute(_COPIED_ROWS, (session_id, start, stop))
    db.execute(_COPIED_TEXT, (session_id, start, stop))


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def search_sql(query: SearchQuery, space: str) -> tuple[str, list[Any]]:
    """The statement and parameters of one page of ``query`` (and one hit more, to tell a next page follows)."""
    terms = query.terms
    indexed = [t for t in terms if len(t) >= _FTS_MIN]
    params: list[Any] = []
    if indexed:
        source = (
            "(SELECT rowid AS id, bm25(search_text) AS score FROM search_text WHERE search_text MATCH ?) f"
            " JOIN search_rows r ON r.id = f.id"
        )
        params.append(" AND ".join(_phrase(t) for t in indexed))
        order = "f.score, "
    else:
        source, order = "search_rows r", ""
    where = ["s.space = ?"]
    params.append(space)
    if not query.include_archived:
        where.append("s.status != 'archived'")
    for term in terms:
        if len(term) < _FTS_MIN:
            where.append(f"{_CONTENT} LIKE ? ESCAPE '\\'")
            params.append(_like(term))
    sql = (
        f"SELECT r.session_id, s.label, s.status, r.seq, r.turn, e.type, e.time, {_CONTENT} FROM {source}"
        " JOIN sessions s ON s.id = r.session_id JOIN events e ON e.session_id = r.session_id AND e.seq = r.seq"
        f" WHERE {' AND '.join(where)} ORDER BY {order}e.time DESC, r.session_id, r.seq DESC LIMIT ? OFFSET ?"
    )
    return sql, [*params, query.limit + 1, query.offset]


def search_sync(db: sqlite3.Connection, space: str, query: SearchQuery) -> SearchPage:
    """One page of hits in ``space`` (read on ``db``).

    Raises:
        StoreError: the database failed (translated).
    """
    sql, params = search_sql(query, space)
    try:
        rows = db.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, "search failed") from exc
    terms = query.terms
    hits = [
        hit_of(
            session_id=r[0],
            label=r[1],
            status=r[2],
            seq=r[3],
            turn=r[4],
            event_type=r[5],
            time=r[6],
            content=r[7],
            terms=terms,
        )
        for r in rows
    ]
    return page_of(hits, query)
