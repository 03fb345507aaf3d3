"""Property: the prefix two sessions are said to share is exactly the longest common prefix of their logs."""

from __future__ import annotations

import asyncio
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stellate import Agent
from stellate.llm.scripted import ScriptedLLM
from stellate.log.events import Event
from stellate.store import SessionId
from stellate.store.memory import MemoryStore

# An operation on the n-th session made so far (modulo their number): a turn, a fork, or an edit of a turn.
OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["turn", "fork", "edit"]), st.integers(0, 50), st.integers(1, 50)),
    min_size=1,
    max_size=12,
)


def common_prefix(a: list[Event], b: list[Event]) -> int:
    return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(a, b, strict=False)))


async def build_and_compare(operations: list[tuple[str, int, int]]) -> None:
    async with Agent(MemoryStore(), llm=ScriptedLLM(default="ok")) as agent:
        ids = [(await agent.create_session(label="root")).id]
        for n, (kind, pick, turn) in enumerate(operations):
            source = ids[pick % len(ids)]
            turns = (await agent.get_session_digest(source)).turn_count
            if kind == "turn" or (kind == "edit" and turns == 0):
                await agent.turn(source, f"message {n}")
            elif kind == "fork":
                ids.append((await agent.fork_session(source, label=f"fork {n}", context="inherit")).id)
            else:
                number = (turn - 1) % turns + 1
                edited = await agent.edit_turn(source, number, f"edit {n}", label=f"edit {n}")
                ids.append(edited.session.id)
                starts = await (await agent.store()).read_events(SessionId(source), types=("turn/start",))
                start = next(e.seq for e in starts if e.data["turn"] == number)
                assert (await (await agent.store()).get_session(SessionId(edited.session.id))).inherited == start
        store = await agent.store()
        logs = {sid: await store.read_events(SessionId(sid)) for sid in ids}
        for a, b in itertools.combinations_with_replacement(ids, 2):
            found = await agent.compare_sessions(a, b)
            assert found.shared_through_seq + 1 == common_prefix(logs[a], logs[b]), (a, b)
            after = {
                e.data["turn"]
                for sid in (a, b)
                for e in logs[sid][found.shared_through_seq + 1 :]
                if e.type == "turn/start"
            }
            assert [row.turn for row in found.rows] == sorted(after)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS)
def test_the_shared_prefix_is_the_longest_common_prefix_of_the_two_logs(operations: list[tuple[str, int, int]]) -> None:
    """Whatever the forest of forks and edits, `compare_sessions` splits two logs where they first differ."""
    asyncio.run(build_and_compare(operations))
