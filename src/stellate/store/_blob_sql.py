"""The blob table's SQL, shared by SQLite and PostgreSQL (only the placeholder and the bytes type differ)."""

from __future__ import annotations

from stellate.store.blobs import IMAGE_EVENT_TYPES

__all__ = ["REFERRING_PATTERN", "blob_migration", "blob_sql"]

REFERRING_PATTERN = '%"images"%'
"""The ``LIKE`` pattern (a parameter: psycopg would read a literal ``%``) of event data that may refer to blobs."""


def blob_migration(bytes_type: str) -> str:
    """The migration creating the ``blobs`` table."""
    return f"""
    CREATE TABLE blobs (
        space TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        media_type TEXT NOT NULL,
        size BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        data {bytes_type} NOT NULL,
        PRIMARY KEY (space, sha256)
    )
    """


def blob_sql(p: str) -> dict[str, str]:
    """The statements, with placeholder ``p`` (``?`` or ``%s``); one hash per ``has``."""
    types = ", ".join(f"'{t}'" for t in IMAGE_EVENT_TYPES)
    return {
        "put": (
            "INSERT INTO blobs (space, sha256, media_type, size, created_at, data)"
            f" VALUES ({p}, {p}, {p}, {p}, {p}, {p})"
            " ON CONFLICT (space, sha256) DO UPDATE SET created_at = excluded.created_at"
        ),
        "get": f"SELECT media_type, data, created_at FROM blobs WHERE space = {p} AND sha256 = {p}",
        "old": f"SELECT sha256 FROM blobs WHERE space = {p} AND created_at <= {p}",
        "referring": (
            "SELECT e.data FROM events e JOIN sessions s ON s.id = e.session_id"
            f" WHERE s.space = {p} AND e.type IN ({types}) AND e.data LIKE {p}"
        ),
        "delete": f"DELETE FROM blobs WHERE space = {p} AND sha256 = {p}",
        "has": f"SELECT sha256 FROM blobs WHERE space = {p} AND sha256 = {p}",
    }
