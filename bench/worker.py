"""Run one case in this process: ``python -m bench.worker '<json spec>'``; the last stdout line is the result.

A spec is ``{"case": "<system>.<bench>", "params": {...}}``. The worker makes a temporary
directory (and, for ``db: pg``, a throwaway schema) that it removes afterwards.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sys
import tempfile
from contextlib import ExitStack
from typing import Any

from bench.common import pg_schema

RESULT_PREFIX = "RESULT "

#: system -> module holding its ``b1``..``b4`` functions.
MODULES = {
    "stellate": "bench.stellate_cases",
    "raw": "bench.raw_cases",
    "langgraph": "bench.langgraph_cases",
    "agents": "bench.agents_cases",
    "e2e": "bench.e2e_cases",
    "server": "bench.server_cases",
    "fresh": "bench.fresh_cases",
    "streaming": "bench.streaming_cases",
    "stream_peers": "bench.stream_peers",
    "session_io": "bench.session_io_cases",
    "serve": "bench.serve_cases",
    "forest": "bench.forest_cases",
}


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one case in this process and return its measurements."""
    system, function = spec["case"].split(".", 1)
    fn = getattr(importlib.import_module(MODULES[system]), function)
    with ExitStack() as stack:
        params = dict(spec["params"])
        params["dir"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="stellate-bench-"))
        if params.get("db") == "pg":
            params["schema"] = stack.enter_context(pg_schema())
        out = fn(params)
        result: dict[str, Any] = asyncio.run(out) if inspect.iscoroutine(out) else out
    return result


def main() -> None:
    spec = json.loads(sys.argv[1])
    print(RESULT_PREFIX + json.dumps(run_case(spec)), flush=True)


if __name__ == "__main__":
    main()
