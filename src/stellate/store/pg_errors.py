"""PostgreSQL's errors as stellate's: the one place psycopg errors are translated, and URLs named without passwords."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from stellate.errors import ConflictError, FormatError, NotFoundError, StellateError, StoreError, UsageError

__all__ = ["describe_url", "translate_error"]


def describe_url(url: str) -> str:
    """``user@host:port/db`` for messages: the URL without its password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise UsageError(f"not a PostgreSQL URL: {exc}") from exc
    host, port = params.get("host") or "localhost", params.get("port") or 5432
    return f"{params.get('user') or '(default user)'}@{host}:{port}/{params.get('dbname') or '(default db)'}"


def translate_error(exc: psycopg.Error | UnicodeEncodeError, what: str, where: str, **details: Any) -> StellateError:
    """The one place psycopg errors become stellate errors."""
    text = str(exc).strip()
    if isinstance(exc, UnicodeEncodeError | psycopg.DataError):  # a lone surrogate; a NUL in a text column
        return FormatError(f"{what}: PostgreSQL cannot store this text ({text})", **details)
    state = exc.sqlstate or ""
    if isinstance(exc, pg_errors.UniqueViolation):  # only (session_id, seq): a taken session id is ON CONFLICT
        return ConflictError(f"{what}: another writer took these seqs; re-read and retry", **details)
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        return NotFoundError(f"{what}: the topology parent does not exist ({text})", **details)
    if state.startswith("40"):  # class 40, transaction rollback: a deadlock or serialization failure; retryable
        return ConflictError(f"{what}: the transaction lost a race with another writer ({text})", **details)
    # No SQLSTATE: failed on the client side (refused, pool timeout); class 08 / 57P: connection lost or refused.
    if isinstance(exc, psycopg.OperationalError) and (not state or state.startswith(("08", "57P"))):
        return StoreError(
            f"{what}: no usable connection to PostgreSQL at {where} ({text}); check that the server is running"
            " and reachable, that the URL's user, password and database are right, and that the pool's"
            " max_size fits the server's max_connections",
            code="store_unavailable",
            **details,
        )
    return StoreError(f"{what}: {text}", **details)
