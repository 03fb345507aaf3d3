"""``stellate serve``: the HTTP API (extra ``server``) over the command's database and provider settings."""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stellate.agent import Agent, Reflector
from stellate.cli.database import Database, open_database
from stellate.cli.devtools import serve_and_open, ui_url
from stellate.cli.erasing import add_serve_prune_options, prune_policy
from stellate.cli.invocation import Invocation
from stellate.cli.listening import bind_listener
from stellate.cli.providers import adapter_or_placeholder, describe_provider, public_providers, served_model
from stellate.cli.reflection import ReflectorSettings, add_reflector_options, build_reflector, reflector_settings
from stellate.cli.usage import add_price_option
from stellate.errors import UsageError
from stellate.server.defaults import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_STREAMS_PER_CLIENT,
    DEFAULT_STREAMS_PER_SPACE,
)
from stellate.server.keys import KeyRing
from stellate.store import BaseStore

__all__ = ["add_parser", "describe_store", "is_loopback", "keys_path"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
BUILTIN_TOOLS = ("create_session",)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Register ``serve``."""
    serve_parser = commands.add_parser(
        "serve",
        parents=[common],
        help="serve the REST + SSE API (pip install 'stellate[server]')",
        description="Binds 127.0.0.1:8700. Beyond loopback it needs API keys (`stellate keys create`).",
    )
    serve_parser.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    serve_parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve_parser.add_argument("--keys", metavar="FILE", help="API key file (default: beside the database)")
    serve_parser.add_argument("--open", action="store_true", help="open the devtools UI in a browser once listening")
    serve_parser.add_argument("--grace", type=float, default=10.0, help="seconds turns get to finish at shutdown")
    serve_parser.add_argument(
        "--consolidate-every",
        dest="consolidate_every",
        type=_positive_int,
        metavar="N",
        help="consolidate a session's memory every N turns, in the background (once, whichever worker ran them)",
    )
    serve_parser.add_argument("--provider", help=f"model provider: {', '.join(public_providers())}")
    serve_parser.add_argument("--model", help="model name (for local: a GGUF file)")
    serve_parser.add_argument("--base-url", dest="base_url", help="API root of an OpenAI-compatible server")
    serve_parser.add_argument("--skills", metavar="DIR", help="a folder of SKILL.md folders the sessions may use")
    add_reflector_options(serve_parser)
    add_price_option(serve_parser)
    _add_safety_options(serve_parser)
    add_serve_prune_options(serve_parser)
    serve_parser.set_defaults(handler=serve)


def _add_safety_options(parser: argparse.ArgumentParser) -> None:
    """The flags of docs/server.md's "Security" and "Limits" sections."""
    add = parser.add_argument
    add(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="HOST",
        help="a Host name to serve besides loopback (example.com, *.example.com, *); repeatable",
    )
    add(
        "--allowed-origin",
        dest="allowed_origins",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin whose pages may change state (https://app.example.com); repeatable",
    )
    add(
        "--forwarded-allow-ips",
        dest="forwarded_allow_ips",
        metavar="IPS",
        help="proxies whose X-Forwarded-For/-Proto are trusted (default $FORWARDED_ALLOW_IPS or 127.0.0.1)",
    )
    add(
        "--keep-alive",
        dest="keep_alive",
        type=_positive_int,
        default=DEFAULT_KEEP_ALIVE,
        metavar="S",
        help=f"seconds an idle connection is kept open (default {DEFAULT_KEEP_ALIVE})",
    )
    for flag, default, what in (
        ("--header-timeout", DEFAULT_HEADER_TIMEOUT, "headers"),
        ("--body-timeout", DEFAULT_BODY_TIMEOUT, "body"),
    ):
        add(
            flag,
            type=_positive_float,
            default=default,
            metavar="S",
            help=f"seconds a client has to send a request's {what} (default {default:g})",
        )
    for per, default in (("client", DEFAULT_STREAMS_PER_CLIENT), ("space", DEFAULT_STREAMS_PER_SPACE)):
        add(
            f"--max-streams-per-{per}",
            dest=f"streams_per_{per}",
            type=_positive_int,
            default=default,
            metavar="N",
            help=f"event streams one {per} may hold open (default {default})",
        )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(text)
    return value


def keys_path(flag: str | None, env: Mapping[str, str], database: Database) -> Path:
    """The API key file: ``--keys``, else ``$STELLATE_KEYS``, else beside the database."""
    named = flag or env.get("STELLATE_KEYS")
    return Path(named).expanduser() if named else database.keys_file


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def describe_store(database: Database) -> str:
    """The store for people: the file, or the URL without its password."""
    if database.path is not None:
        return database.describe()
    scheme, _, rest = database.location.partition("://")
    where = f"{scheme}://{rest.rsplit('@', 1)[-1]}" if "@" in rest else database.location
    return where if database.schema is None else f"{where} (schema {database.schema})"


async def serve(inv: Invocation) -> int:
    """Serve until interrupted; running turns get ``--grace`` seconds to finish, then are aborted."""
    try:
        from stellate.server.app import create_app
        from stellate.server.serving import BoundServer, uvicorn_config
    except ImportError as exc:
        raise UsageError('the server needs its extra: pip install "stellate[server]"', code="missing_extra") from exc
    args, database = inv.args, inv.database()
    keyring = KeyRing(keys_path(inv.option("keys"), inv.env, database))
    with_keys = keyring.has_active_keys()
    if not with_keys and not is_loopback(args.host):
        raise UsageError(
            f"refusing to listen on {args.host} without API keys: create one with "
            f"`stellate keys create --space NAME`, or bind 127.0.0.1",
            code="keys_required",
        )
    settings, offered = served_model(inv.provider())  # as `chat` does: a server serving one model is asked for it
    llm, configured = adapter_or_placeholder(settings)
    wanted = reflector_settings(args, inv.config())
    reflector = None if wanted is None else build_reflector(wanted, settings, llm, configured=configured)
    with_skills = bool(inv.option("skills") or inv.config().skills_dir)
    builtins = (*BUILTIN_TOOLS, "activate_skill") if with_skills else BUILTIN_TOOLS  # skills are served by a tool
    with bind_listener(args.host, args.port) as sock:  # before the store opens: a bad address creates nothing
        port = int(sock.getsockname()[1])
        async with open_database(database, create=True) as store:

            def agent_of(scoped: BaseStore) -> Agent:
                return inv.agent(
                    scoped,
                    llm=llm,
                    builtin_tools=builtins,
                    configured=configured,
                    consolidate_every=args.consolidate_every,
                    reflector=reflector,
                )

            app = create_app(
                agent_of(store),
                spaces=lambda space: agent_of(store.in_space(space)),
                keys=keyring if with_keys else None,
                store_name=describe_store(database),
                reflect_every=wanted.every if wanted is not None else None,
                **_app_options(args),
            )
            config = uvicorn_config(app, **_server_options(args))
            inv.consoles.out.print(
                _startup_line(args.host, port, database, keyring, with_keys, configured), soft_wrap=True
            )
            url = ui_url(args.host, port)
            inv.consoles.out.print(f"devtools UI (the star map): {url}", soft_wrap=True)
            if configured:  # markup=False: "[reflector]" and model names are text, not styles
                model_line = f"model: {describe_provider(settings, llm, offered=offered)}"
                inv.consoles.out.print(model_line, soft_wrap=True, markup=False)
            inv.consoles.out.print(_reflector_line(wanted, reflector), soft_wrap=True, markup=False)
            await serve_and_open(BoundServer(config, sock), url if args.open else None)
    return 0


def _app_options(args: argparse.Namespace) -> dict[str, Any]:
    """`create_app`'s options from the flags."""
    return {
        "shutdown_grace": args.grace,
        "allowed_hosts": args.allowed_hosts,
        "allowed_origins": args.allowed_origins,
        "body_timeout": args.body_timeout,
        "max_streams_per_client": args.streams_per_client,
        "max_streams_per_space": args.streams_per_space,
        "prune": prune_policy(args),
    }


def _server_options(args: argparse.Namespace) -> dict[str, Any]:
    """`uvicorn_config`'s options from the flags."""
    return {
        "keep_alive": args.keep_alive,
        "header_timeout": args.header_timeout,
        "forwarded_allow_ips": args.forwarded_allow_ips,
        "timeout_graceful_shutdown": max(int(args.grace), 1),
        "log_level": "warning",
    }


def _reflector_line(wanted: ReflectorSettings | None, reflector: Reflector | None) -> str:
    if wanted is None or reflector is None:
        return "reflector: off (--reflector or a [reflector] table in the config file turns it on)"
    every = f"every {wanted.every:g} s" if wanted.every else "on request"
    prompt = "own prompt" if wanted.instructions else "built-in prompt"
    return f"reflector: {reflector.llm.provider} · {reflector.llm.model}, {prompt}, {every}"


def _startup_line(host: str, port: int, database: Database, keyring: KeyRing, with_keys: bool, model: bool) -> str:
    where = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    if with_keys:
        spaces = sorted({k.space for k in keyring.keys() if k.active})
        auth = f"API keys required ({keyring.path}; spaces: {', '.join(spaces)})"
    else:
        auth = "no API keys: dev mode, one 'default' space, loopback only"
    provider = "" if model else "; no model provider configured (turns will fail until one is set)"
    return f"stellate serve: {where} (store {describe_store(database)}; {auth}{provider}); API docs at {where}/docs"
