"""``python -m bench.profiled PATH ARGS...``: the stellate CLI (``python -m stellate.cli ARGS...``) under cProfile.

The stats are written to PATH when the command returns (a server: once SIGTERM stopped it; the signal uvicorn
raises again after its graceful shutdown is ignored so the stats get written).
"""

from __future__ import annotations

import cProfile
import signal
import sys


def main() -> None:
    from stellate.cli import main as cli

    path, sys.argv = sys.argv[1], [sys.argv[0], *sys.argv[2:]]
    signal.signal(signal.SIGTERM, lambda *_: None)
    with cProfile.Profile() as profiler:
        try:
            cli()
        except SystemExit:
            pass
    profiler.dump_stats(path)


if __name__ == "__main__":
    main()
