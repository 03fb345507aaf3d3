"""``stellate db``: where the database is, and bringing its schema up to date."""

from __future__ import annotations

import argparse

from stellate.cli.database import open_database
from stellate.cli.erasing import add_prune_parser
from stellate.cli.invocation import Invocation
from stellate.errors import StoreError
from stellate.store import BaseStore
from stellate.store.sqlite import MIGRATIONS, SqliteStore

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``db`` and its actions."""
    db = commands.add_parser("db", help="the database: its path, schema migrations, pruning")
    actions = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("path", parents=[common], help="print the database path").set_defaults(handler=path)
    actions.add_parser("migrate", parents=[common], help="create the database or upgrade its schema").set_defaults(
        handler=migrate
    )
    add_prune_parser(actions, common)


def path(inv: Invocation) -> int:
    """Print where the database is (``--db``, ``$STELLATE_DB`` or ``./stellate.db``)."""
    inv.consoles.out.print(inv.database().describe(), soft_wrap=True)
    return 0


async def migrate(inv: Invocation) -> int:
    """Create the database, or apply the migrations it lacks; running it again changes nothing."""
    database, out = inv.database(), inv.consoles.out
    if not database.exists():
        async with open_database(database, create=True) as store:
            out.print(f"created {database.describe()} ({await _schema(store)})")
        return 0
    try:
        async with open_database(database) as store:
            out.print(f"{database.describe()} is up to date ({await _schema(store)})")
        return 0
    except StoreError as exc:
        if exc.code == "store_not_found" and database.path is None:
            return await _create_server_database(inv)
        if exc.code != "schema_behind":
            raise
    async with open_database(database, migrate=True) as store:
        out.print(f"migrated {database.describe()} to {await _schema(store)}")
    return 0


async def _create_server_database(inv: Invocation) -> int:
    """Create the PostgreSQL database the URL names, as ``migrate`` creates a missing SQLite file.

    Only this command creates one: a worker or a read started with a mistyped URL says the database is
    missing instead of serving an empty one.
    """
    from stellate.store.pg_database import create_database, database_name

    database = inv.database()
    await create_database(database.url)
    async with open_database(database) as store:
        name = database_name(database.url)
        inv.consoles.out.print(f'created database "{name}": {database.describe()} ({await _schema(store)})')
    return 0


async def _schema(store: BaseStore) -> str:
    if isinstance(store, SqliteStore):
        return f"schema {await store.schema_version()} of {len(MIGRATIONS)}"
    return "schema managed by the store"
