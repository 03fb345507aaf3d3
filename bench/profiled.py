"""``python -m bench.profiled PATH ARGS...``: the stellate CLI (``python -m stellate.cli ARGS...``) under cProfile.

The stats are written to PATH when the command returns (a server: once SIGTERM stopped it; the signal uvicorn
raises again after its graceful shutdown is ignored so the stats get written). The profiler starts off:
SIGUSR1 turns it on, SIGUSR2 off, so a benchmark profiles its timed part only (not the imports, the start).
"""

from __future__ import annotations

import cProfile
import signal
import sys


def main() -> None:
    from stellate.cli import main as cli

    path, sys.argv = sys.argv[1], [sys.argv[0], *sys.argv[2:]]
    signal.signal(signal.SIGTERM, lambda *_: None)
    profiler = cProfile.Profile()
    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
    signal.signal(signal.SIGUSR2, lambda *_: profiler.disable())
    try:
        cli()
    except SystemExit:
        pass
    profiler.disable()
    profiler.dump_stats(path)


if __name__ == "__main__":
    main()
