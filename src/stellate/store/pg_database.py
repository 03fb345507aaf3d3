"""The PostgreSQL database a store URL names: whether the server has it, and creating it when it does not.

``stellate db migrate`` creates a missing database (as it creates a missing SQLite file), so a first deployment
needs no ``createdb``; every other command only says that the database is missing. Both ask the server through
its maintenance database (``postgres``, else ``template1``), which every PostgreSQL server has.
"""

from __future__ import annotations

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
except ImportError as exc:  # pragma: no cover - the tests that reach this module run with the extra
    raise ImportError('the PostgreSQL store needs psycopg: pip install "stellate[postgres]"') from exc

import getpass

from stellate.errors import StoreError
from stellate.store.pg_errors import describe_url as _describe
from stellate.store.postgres import Connection

__all__ = ["create_database", "database_name", "has_database"]

_MAINTENANCE_DATABASES = ("postgres", "template1")
_CONNECT_TIMEOUT = 5


def database_name(url: str) -> str:
    """The database ``url`` names; libpq's default is the user's name."""
    params = conninfo_to_dict(url)
    return str(params.get("dbname") or params.get("user") or getpass.getuser())


async def has_database(url: str) -> bool | None:
    """Whether the server of ``url`` has the database it names; None when the server cannot be asked."""
    try:
        async with await _maintenance_connection(url) as conn:
            cursor = await conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database_name(url),))
            return await cursor.fetchone() is not None
    except psycopg.Error:
        return None


async def create_database(url: str) -> None:
    """Create the database ``url`` names (owned by the URL's user); one created meanwhile is left as it is.

    Raises:
        StoreError: the server cannot be reached, or the URL's user may not create databases.
    """
    name = database_name(url)
    try:
        async with await _maintenance_connection(url) as conn:
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except pg_errors.DuplicateDatabase:
        return  # another `db migrate` created it first
    except pg_errors.InsufficientPrivilege as exc:
        raise StoreError(
            f'cannot create database "{name}" on {_describe(url)}: its user may not create databases; '
            f'have an administrator run CREATE DATABASE "{name}" OWNER <user>, then `stellate db migrate` again'
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(f'cannot create database "{name}" on {_describe(url)}: {str(exc).strip()}') from exc


async def _maintenance_connection(url: str) -> Connection:
    failure: psycopg.Error | None = None
    for dbname in _MAINTENANCE_DATABASES:
        try:
            return await psycopg.AsyncConnection.connect(
                make_conninfo(url, dbname=dbname), autocommit=True, connect_timeout=_CONNECT_TIMEOUT
            )
        except psycopg.OperationalError as exc:
            failure = exc
    assert failure is not None
    raise failure
