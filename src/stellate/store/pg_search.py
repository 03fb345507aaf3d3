"""PostgreSQL's message search: a trigram GIN index on the messages of ``events``, kept by PostgreSQL itself.

The index is an *expression* index over the message text (``data::json->>'content'`` of the searched event
types), so it is written in the same transaction as every append, needs no table of its own, and goes with the
events it indexes. Matching is substring, every term, any case (``ILIKE``), found through ``pg_trgm``: it works
for Chinese and for parts of words, which PostgreSQL's word search (``tsvector @@ tsquery``) cannot do for text
without spaces between words. Hits are ranked by ``ts_rank`` of a ``simple`` (language-neutral) ``tsvector``
computed for the matching messages: whole-word matches first.
"""

from __future__ import annotations

from typing import Any

from stellate.store.search import SearchPage, SearchQuery, hit_of, page_of

__all__ = ["SEARCH_MIGRATION", "search_messages_sql", "search_page"]

_TYPES = "('user/message', 'assistant/message')"
_CONTENT = "(e.data::json->>'content')"

#: Creates ``pg_trgm`` (in ``public`` unless it exists already; trusted since PostgreSQL 13, so a database
#: owner may) and the index, which indexes the messages already stored as it is built.
SEARCH_MIGRATION = """
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
DO $$
DECLARE
    home text;
BEGIN
    SELECT n.nspname INTO home FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace
        WHERE x.extname = 'pg_trgm';
    EXECUTE format(
        'CREATE INDEX events_search_trigrams ON events USING gin ((data::json->>''content'') %I.gin_trgm_ops)'
        ' WHERE type IN (''user/message'', ''assistant/message'')', home);
END
$$
"""


def _like(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_messages_sql(query: SearchQuery, space: str) -> tuple[str, list[Any]]:
    """One page of ``query`` in ``space`` (and one hit more): the statement and its parameters."""
    terms = query.terms
    archived = "" if query.include_archived else " AND s.status <> 'archived'"
    likes = "".join(f" AND {_CONTENT} ILIKE %s" for _ in terms)
    sql = (
        "WITH hits AS ("
        f" SELECT e.session_id, s.label, s.status, e.seq, e.type, e.time, {_CONTENT} AS body,"
        f" ts_rank(to_tsvector('simple', {_CONTENT}), plainto_tsquery('simple', %s)) AS score"
        " FROM events e JOIN sessions s ON s.id = e.session_id"
        f" WHERE e.type IN {_TYPES} AND s.space = %s{archived}{likes}"
        " ORDER BY score DESC, e.time DESC, e.session_id, e.seq DESC LIMIT %s OFFSET %s)"
        " SELECT h.session_id, h.label, h.status, h.seq, COALESCE((SELECT (t.data::json->>'turn')::bigint"
        " FROM events t WHERE t.session_id = h.session_id AND t.seq < h.seq AND t.type IN ('turn/start', 'turn/end')"
        " ORDER BY t.seq DESC LIMIT 1), 0), h.type, h.time, h.body"
        " FROM hits h ORDER BY h.score DESC, h.time DESC, h.session_id, h.seq DESC"
    )
    params: list[Any] = [" ".join(terms), space, *(_like(t) for t in terms), query.limit + 1, query.offset]
    return sql, params


def search_page(rows: list[Any], query: SearchQuery) -> SearchPage:
    """The page from the rows `search_messages_sql` read."""
    terms = query.terms
    hits = [
        hit_of(
            session_id=r[0],
            label=r[1],
            status=r[2],
            seq=int(r[3]),
            turn=int(r[4]),
            event_type=r[5],
            time=int(r[6]),
            content=r[7],
            terms=terms,
        )
        for r in rows
    ]
    return page_of(hits, query)
