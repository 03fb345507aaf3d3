"""Fail every write of a tool-calling turn, one at a time: the session never wedges and nothing committed is lost.

For each N, the store's N-th write during the turn fails (before writing, or after committing with its answer
lost). After it: the session in memory equals its store, the log is valid, every committed event is still
there, and the next turn works (closing first, as crash repair would, a turn the store still shows open).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_support import WRITES, FaultyStore, check_consistent, run_turn

from stellate.engine.events import TurnFinished
from stellate.errors import ConflictError, StoreError
from stellate.llm.scripted import FunctionLLM, Reply, tool_call
from stellate.llm.types import LLMRequest
from stellate.log import ToolMessage
from stellate.session import Session, SessionRuntime
from stellate.session.types import Durability
from stellate.store import BaseStore, SessionId

FAULTS: dict[str, tuple[Callable[[], Exception], bool]] = {
    "store_error": (lambda: StoreError("injected: the database went away"), False),
    "store_locked": (lambda: ConflictError("injected: locked by another process", code="store_locked"), False),
    "answer_lost": (lambda: StoreError("injected: the connection dropped after the commit"), True),
    "store_down": (lambda: StoreError("injected: the database is down"), False),
    "store_blink": (lambda: StoreError("injected: the database restarted"), False),
}
#: With the store down, the reads that follow the failed write fail too: the session cannot learn what the
#: store holds until the next turn.
READS_DOWN = {"store_down": 2, "store_blink": 1}  # a blink: back by the time the turn closes
# A lease granted but whose answer was lost is held by nobody until its ttl runs out: by design, the next turn
# waits for it to lapse (tests/agent covers that), so the lost-answer fault spares lease grants.
COUNTED = {"answer_lost": WRITES - {"acquire_lease"}}


def answer(request: LLMRequest) -> Reply:
    """Two lookups for a question, a summary once their results are in."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return Reply(text="Both are mild.")
    if last.content == "Compare Leiden and Delft":
        return Reply(text="Checking both.", tool_calls=[tool_call("lookup", {"city": c}) for c in ("Leiden", "Delft")])
    return Reply(text=f"About {last.content!r}: noted.")


async def writes_per_turn(store: BaseStore, durability: Durability, counted: frozenset[str]) -> int:
    faulty = FaultyStore(store, FAULTS["store_error"][0], writes=counted)
    runtime = SessionRuntime(llm=FunctionLLM(answer), durability=durability)
    session = await Session.create(store, runtime, session_id=SessionId("count"))
    session.store = faulty  # type: ignore[assignment]
    assert isinstance(await run_turn(session, "Compare Leiden and Delft"), TurnFinished)
    return faulty.writes


@pytest.mark.parametrize("durability", ["step", "turn"])
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_failed_write_at_any_point_of_a_turn_never_wedges_the_session(
    backend: BaseStore, fault: str, durability: Durability
) -> None:
    error, after_commit = FAULTS[fault]
    counted = COUNTED.get(fault, WRITES)
    total = await writes_per_turn(backend, durability, counted)
    assert total >= (5 if durability == "step" else 1)
    for n in range(1, total + 1):
        runtime = SessionRuntime(llm=FunctionLLM(answer), durability=durability)
        session = await Session.create(backend, runtime, session_id=SessionId(f"{fault}-{durability}-{n}"))
        assert isinstance(await run_turn(session, "Hello"), TurnFinished)
        before = await backend.read_events(session.id)
        down = READS_DOWN.get(fault, 0)
        faulty = FaultyStore(backend, error, after_commit=after_commit, writes=counted, reads_down=down)
        faulty.fail_at = n
        session.store = faulty  # type: ignore[assignment]

        outcome = await run_turn(session, "Compare Leiden and Delft")
        assert faulty.writes >= n, f"write {n} was never reached"
        assert isinstance(outcome, TurnFinished | StoreError), f"write {n}: {outcome!r}"
        if down:
            faulty.reads_down = 0
            events = await backend.read_events(session.id)
        else:
            events = await check_consistent(session, backend)
        assert events[: len(before)] == before, f"write {n}: committed events changed"
        assert all(events[e.seq] == e for e in faulty.committed), f"write {n}: a committed event was lost"

        faulty.fail_at = None
        finished = await run_turn(session, "Thanks")
        assert isinstance(finished, TurnFinished) and finished.result.reason == "completed", f"write {n}"
        assert finished.result.content == "About 'Thanks': noted."
        events = await check_consistent(session, backend)
        assert not (await backend.get_session(session.id)).cursor.turn_open
        reopened = await Session.load(backend, session.id, runtime)
        assert reopened.context() == session.context(), f"write {n}: memory and store derive different contexts"
