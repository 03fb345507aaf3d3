"""PostgreSQL's schema: the append-only list of migrations `PostgresStore` applies at open."""

from __future__ import annotations

from stellate.store._blob_sql import blob_migration
from stellate.store._erase_sql import TOMBSTONES_MIGRATION
from stellate.store._sql import SPACE_MIGRATION
from stellate.store.pg_search import SEARCH_MIGRATION

__all__ = ["MIGRATIONS"]

#: Append-only: never edit a released entry, add a new one. Same tables and columns as SQLite's.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        parent_id TEXT REFERENCES sessions(id),
        source_id TEXT,
        fork_seq BIGINT,
        inherited BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        label TEXT NOT NULL,
        status TEXT NOT NULL,
        system_prompt TEXT,
        memory TEXT,
        insight TEXT,
        config TEXT NOT NULL,
        last_activity BIGINT NOT NULL,
        turn_count BIGINT NOT NULL,
        next_seq BIGINT NOT NULL,
        cursor TEXT NOT NULL
    );
    CREATE INDEX sessions_parent ON sessions(parent_id);
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        type TEXT NOT NULL,
        time BIGINT NOT NULL,
        data TEXT NOT NULL,
        ignorable BOOLEAN NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    """,
    # Turn markers by seq: a fork at a past boundary finds its marker with an index seek even while the
    # planner's statistics are stale (without it, a scan of the session plus a sort).
    """
    CREATE INDEX events_turn_markers ON events (session_id, seq) WHERE type IN ('turn/start', 'turn/end')
    """,
    # The session's lease: one writer per session across processes (all NULL when nobody holds it).
    """
    ALTER TABLE sessions
        ADD COLUMN lease_owner TEXT,
        ADD COLUMN lease_token TEXT,
        ADD COLUMN lease_acquired_at BIGINT,
        ADD COLUMN lease_expires_at BIGINT
    """,
    # Claims on background work (a scheduled consolidation), so one process does it.
    """
    CREATE TABLE claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, token TEXT NOT NULL, expires_at BIGINT NOT NULL)
    """,
    SPACE_MIGRATION,
    # Derived fold segments (stellate.store.segments): dropping the table's rows costs speed, never correctness.
    """
    CREATE TABLE fold_segments (
        session_id TEXT NOT NULL,
        start_seq BIGINT NOT NULL,
        end_seq BIGINT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, start_seq, end_seq)
    )
    """,
    # Whether a turn is open, beside the cursor that says so: digest listings read it without parsing JSON.
    """
    ALTER TABLE sessions ADD COLUMN turn_open BOOLEAN NOT NULL DEFAULT false;
    UPDATE sessions SET turn_open = true WHERE (cursor::json->>'turn_open')::boolean
    """,
    # The event history (stellate.store.history): opaque rows per space, ids handed out by the space's head row.
    """
    CREATE TABLE event_history (
        space TEXT NOT NULL,
        id BIGINT NOT NULL,
        time BIGINT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (space, id)
    );
    CREATE TABLE event_history_heads (space TEXT PRIMARY KEY, last_id BIGINT NOT NULL)
    """,
    # What remains of erased sessions (stellate.store.erasure); a surviving child may hang from an erased parent,
    # so the parent reference is checked by the insert (stellate.store.pg_erase.lock_lineage), not a foreign key.
    TOMBSTONES_MIGRATION + ";\n    ALTER TABLE sessions DROP CONSTRAINT IF EXISTS sessions_parent_id_fkey",
    # Message search (stellate.store.pg_search): a trigram index over the messages, built from those stored.
    SEARCH_MIGRATION,
    # Blobs (stellate.store.blobs): images stored once per space under their sha256, referred to by events.
    blob_migration("BYTEA"),
)
