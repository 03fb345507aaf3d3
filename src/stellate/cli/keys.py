"""``stellate keys``: create, list and revoke the server's API keys (each bound to one space)."""

from __future__ import annotations

import argparse
import datetime

from rich.table import Table

from stellate.cli.invocation import Invocation
from stellate.cli.serve import keys_path
from stellate.server.keys import KeyRing

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``keys`` and its actions."""
    # --keys goes before or after the action, and each action's --help shows it.
    key_file = argparse.ArgumentParser(add_help=False)
    key_file.add_argument("--keys", metavar="FILE", default=argparse.SUPPRESS, help="key file (default: beside the db)")
    keys = commands.add_parser("keys", parents=[key_file], help="API keys of `stellate serve`: create, list, revoke")
    actions = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    parents = [common, key_file]
    create_parser = actions.add_parser("create", parents=parents, help="make a key (printed once)")
    create_parser.add_argument("--space", required=True, help="the space (tenant) the key opens")
    create_parser.add_argument("--read-only", action="store_true", help="the key may only read")
    create_parser.set_defaults(handler=create)
    actions.add_parser("list", parents=parents, help="every key, without secrets").set_defaults(handler=list_)
    revoke_parser = actions.add_parser("revoke", parents=parents, help="revoke a key by id")
    revoke_parser.add_argument("id", help="key id (from `keys list`)")
    revoke_parser.set_defaults(handler=revoke)


def _ring(inv: Invocation) -> KeyRing:
    return KeyRing(keys_path(inv.option("keys"), inv.env, inv.database()))


def create(inv: Invocation) -> int:
    """Create a key and print it once (only its hash is kept)."""
    entry, secret = _ring(inv).create(inv.args.space, read_only=inv.args.read_only)
    rights = "read-only" if entry.read_only else "read-write"
    inv.consoles.err.print(f"created {entry.id} ({rights}) for space {entry.space!r}; it is shown only now:")
    inv.consoles.out.print(secret, soft_wrap=True)
    return 0


def list_(inv: Invocation) -> int:
    """Print every key: id, space, rights, created, revoked."""
    ring = _ring(inv)
    keys = ring.keys()
    if not keys:
        inv.consoles.out.print(f"no API keys in {ring.path}")
        return 0
    table = Table("id", "space", "rights", "created", "revoked")
    for key in keys:
        table.add_row(
            key.id,
            key.space,
            "read-only" if key.read_only else "read-write",
            _when(key.created_at),
            _when(key.revoked_at) if key.revoked_at else "-",
        )
    inv.consoles.out.print(table)
    return 0


def revoke(inv: Invocation) -> int:
    """Revoke a key; a running server refuses it from its next request on."""
    entry = _ring(inv).revoke(inv.args.id)
    inv.consoles.out.print(f"revoked {entry.id} (space {entry.space!r})")
    return 0


def _when(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
