"""A process killed with SIGKILL in the middle of a turn loses nothing committed.

Opening the session afterwards only reads it; the next writer waits for the dead writer's lease to lapse,
then repairs the turn and goes on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from stellate.llm.scripted import ScriptedLLM
from stellate.log import check_log, derive_transcript, message_to_json
from stellate.log.invariants import check_messages_pairing
from stellate.session import Session, SessionRuntime
from stellate.store import SessionId
from stellate.store.sqlite import SqliteStore

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from stellate.llm.scripted import Delay, Reply, ScriptedLLM, tool_call
    from stellate.session import Session, SessionRuntime
    from stellate.store.sqlite import SqliteStore

    async def main(path, hang_in_tool):
        store = await SqliteStore.open(path)
        call = tool_call("slow", {}, id="call-1")
        second = Reply(tool_calls=[call]) if hang_in_tool else Delay(seconds=60, then="never")
        steps = ["warm-up reply", second]
        runtime = SessionRuntime(llm=ScriptedLLM(steps), lease_ttl=1.0)
        session = await Session.create(store, runtime, session_id="victim")
        await session.send("first question")
        async with session.turn("second question") as turn:
            result = await turn.step()
            if hang_in_tool:
                await turn.record_tool_call(result.tool_calls[0])
                print("IN-TOOL", flush=True)
                await asyncio.sleep(60)

    asyncio.run(main(sys.argv[1], sys.argv[2] == "tool"))
    """
)


async def wait_for_open_turn(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        if path.exists():
            store = await SqliteStore.open(str(path))
            try:
                record = await store.get_session(SessionId("victim"))
                if record.cursor.turn_open and record.turn_count == 2 and record.cursor.step_open:
                    return
            except Exception:  # the writer may not have created the session yet
                pass
            finally:
                await store.close()
        await asyncio.sleep(0.05)
    raise AssertionError("the writer never reached its open turn")


@pytest.mark.parametrize("where", ["model", "tool"])
async def test_sigkill_mid_turn_is_repaired_by_the_next_writer(tmp_path: Path, where: str) -> None:
    if sys.platform == "win32":  # pragma: no cover - POSIX signals
        pytest.skip("needs SIGKILL")
    path = tmp_path / "crash.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), where], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        await wait_for_open_turn(path, proc)
        await asyncio.sleep(0.1)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    store = await SqliteStore.open(str(path))
    try:
        before = await store.read_events(SessionId("victim"))
        llm = ScriptedLLM(["after the crash"])
        session = await Session.load(store, SessionId("victim"), SessionRuntime(llm=llm))
        assert await store.read_events(SessionId("victim")) == before, "opening to read never writes"
        assert session.history.cursor.turn_open
        await session.send("third question")  # waits for the dead writer's lease to lapse, then repairs
        after = await store.read_events(SessionId("victim"))
        assert after[: len(before)] == before, "repair never rewrites committed events"
        closers = after[len(before) :]
        end = next(e for e in closers if e.type == "turn/end")
        assert end.data == {"turn": 2, "reason": "interrupted"}
        check_log(after)
        if where == "tool":
            result = [e for e in after if e.type == "tool/result"][0]
            assert result.data["interrupted"] == "outcome_unknown"
        messages = derive_transcript(await store.read_events(SessionId("victim"))).messages
        check_messages_pairing([message_to_json(m) for m in messages])
        assert [m.content for m in llm.requests[0].messages if m.role == "user"][0] == "first question"
    finally:
        await store.close()
