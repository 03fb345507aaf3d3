"""Live sessions stay live: slot writes and forks from another process never fail a turn, and never fail themselves.

Real processes on one SQLite file or one PostgreSQL schema: one runs tool-round turns back to back while another
writes memory, insights and labels and forks the same session as fast as it can.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from test_lease_processes import new_session, read_line, store, store_url, turns_of, workers
from test_lease_processes import start as start_worker

from stellate.log import check_log
from stellate.store import BaseStore, SessionId

WORKER = str(Path(__file__).with_name("live_worker.py"))
SECONDS = 10.0
__all__ = ["store", "store_url", "workers"]  # fixtures shared with the lease tests


def start(workers: list[subprocess.Popen[str]], *args: str) -> subprocess.Popen[str]:
    return start_worker(workers, *args, script=WORKER)


async def lines_until_done(proc: subprocess.Popen[str]) -> list[str]:
    lines = []
    while not (line := await read_line(proc, timeout=60)).startswith("DONE"):
        lines.append(line)
    return [*lines, line]


async def test_slot_writes_and_forks_beside_running_turns_never_fail(
    store: BaseStore, store_url: str, workers: list[subprocess.Popen[str]]
) -> None:
    sid = await new_session(store)
    turner = start(workers, store_url, sid, "turns", str(SECONDS))
    writer = start(workers, store_url, sid, "slots", str(SECONDS))
    turned, wrote = await asyncio.gather(lines_until_done(turner), lines_until_done(writer))
    assert turner.wait(timeout=30) == 0 and writer.wait(timeout=30) == 0

    _, turns, failed_turns = turned[-1].split()
    _, writes, failed_writes, forks, failed_forks = wrote[-1].split()
    failures = [line for line in turned + wrote if line.startswith("FAIL")]
    assert failures == [], failures
    assert (failed_turns, failed_writes, failed_forks) == ("0", "0", "0")
    assert int(turns) > 0 and int(writes) > 0 and int(forks) > 0
    print(f"\n{store_url.split(':')[0]}: {turns} turns, {writes} slot writes, {forks} forks in {SECONDS:.0f} s")

    events = await store.read_events(SessionId(sid))
    check_log(events)
    assert {reason for _, reason in turns_of(events)} == {"completed"}
    memories = {e.data["content"] for e in events if e.type == "memory/put"}
    assert {line.removeprefix("WROTE ") for line in wrote if line.startswith("WROTE")} <= memories
    children = await store.list_sessions(parent_id=SessionId(sid))
    assert len(children) == int(forks)
    markers = [(e.seq, e.type) for e in events if e.type in ("turn/start", "turn/end")]
    for child in children:
        assert child.source_id == sid
        if child.fork_seq is not None:  # cut between turns: the last turn marker before the cut closes a turn
            assert [t for seq, t in markers if seq <= child.fork_seq][-1:] in ([], ["turn/end"])
        check_log(await store.read_events(child.id))
