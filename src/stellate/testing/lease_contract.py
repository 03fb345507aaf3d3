"""The lease and claim rules of the store contract: one writer per session, background work done once.

`stellate.testing.store_contract` re-exports these tests, so ``from stellate.testing.store_contract import *`` runs
them; import this module alone to run only them, over the same ``store`` and ``reopen`` fixtures.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stellate.errors import ConflictError, InvariantError, NotFoundError, SessionBusyError, UsageError
from stellate.log import make_event
from stellate.store import BaseStore
from stellate.testing.contract_support import Clock, S, open_tool_turn, turn, with_turns

# -- leases: one writer per session ---------------------------------------------------------------


async def test_lease_is_granted_shown_on_the_record_and_released(store: BaseStore) -> None:
    """A free session grants its lease; the record shows owner and expiry; release clears it."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    lease, record = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    assert (lease.owner, lease.acquired_at, lease.expires_at) == ("writer-1", clock.now, clock.now + 5000)
    assert record.lease == lease and record.next_seq == 7
    assert (await store.get_session(S("a"))).lease == lease
    await store.release_lease(S("a"), lease)
    assert (await store.get_session(S("a"))).lease is None


async def test_a_live_lease_keeps_other_writers_out(store: BaseStore) -> None:
    """A second writer gets session_busy naming the holder and the expiry; nothing changes."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(SessionBusyError) as info:
        await store.acquire_lease(S("a"), owner="writer-2", ttl=5)
    assert info.value.code == "session_busy"
    assert info.value.details["holder"] == "writer-1"
    assert info.value.details["expires_at"] == lease.expires_at
    assert (await store.get_session(S("a"))).lease == lease


async def test_a_new_grant_has_a_new_token_even_for_the_same_owner(store: BaseStore) -> None:
    """Leases are told apart by token, not owner: the same owner cannot take a session it already holds."""
    Clock(store)
    await with_turns(store, "a", 1)
    await store.acquire_lease(S("a"), owner="same", ttl=5)
    with pytest.raises(SessionBusyError):
        await store.acquire_lease(S("a"), owner="same", ttl=5)


async def test_a_lapsed_lease_can_be_taken_over(store: BaseStore) -> None:
    """After its expiry a lease is dead: another writer takes the session."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    old, _ = await store.acquire_lease(S("a"), owner="crashed", ttl=5)
    clock.now += 5000
    new, _ = await store.acquire_lease(S("a"), owner="next", ttl=5)
    assert new.token != old.token
    assert (await store.get_session(S("a"))).lease == new


async def test_renewal_extends_a_held_lease(store: BaseStore) -> None:
    """Renewing moves the expiry to ttl from now; the lease then outlives its first expiry."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    clock.now += 4000
    renewed = await store.renew_lease(S("a"), lease, ttl=5)
    assert renewed.expires_at == clock.now + 5000 and renewed.token == lease.token
    clock.now += 3000  # past the first expiry, inside the renewed one
    with pytest.raises(SessionBusyError):
        await store.acquire_lease(S("a"), owner="writer-2", ttl=5)


async def test_a_holders_writes_land_after_free_standing_events_of_others(store: BaseStore) -> None:
    """Slot events another writer adds between two of the holder's writes stay; the holder's batch lands after them.

    It does so even from its stale head, and the events returned carry the seqs they got.
    """
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="holder", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=lease)
    await store.append(S("a"), [make_event("memory/put", {"content": "from elsewhere"})])
    await store.append(S("a"), [make_event("insight/put", {"content": "and this"})])
    moved = await store.append(S("a"), turn(2)[2:4], expected_seq=9, lease=lease)
    assert [e.seq for e in moved] == [11, 12]
    written = await store.append(S("a"), turn(2)[4:], expected_seq=13, lease=lease, release_lease=True)
    assert [e.seq for e in written] == [13, 14]
    record = await store.get_session(S("a"))
    assert (record.next_seq, record.slots.memory, record.slots.insight, record.lease) == (
        15,
        "from elsewhere",
        "and this",
        None,
    )
    types = [e.type for e in await store.read_events(S("a"), start=7)]
    assert types == ["turn/start", "user/message", "memory/put", "insight/put", *(e.type for e in turn(2)[2:])]


async def test_a_holders_stale_head_past_a_turn_event_is_refused(store: BaseStore) -> None:
    """Only free-standing events are looked past: a stale expected seq behind a turn's own events is a conflict."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="holder", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=lease)
    with pytest.raises(ConflictError) as info:
        await store.append(S("a"), turn(2)[2:4], expected_seq=7, lease=lease)
    assert info.value.code == "seq_conflict"
    with pytest.raises(ConflictError):
        await store.append(S("a"), turn(2)[2:4], expected_seq=10, lease=lease)  # ahead of the head
    assert (await store.get_session(S("a"))).next_seq == 9


async def test_free_standing_events_without_an_expected_seq_land_beside_a_holder(store: BaseStore) -> None:
    """Slot events placed at the head (no expected seq) never meet a conflict while a holder writes its turn."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="holder", ttl=5)
    steps = turn(2)
    for i, event in enumerate(steps):
        await store.append(S("a"), [make_event("memory/put", {"content": f"m{i}"})])
        await store.append(S("a"), [event], expected_seq=7 + 2 * i, lease=lease)
    record = await store.get_session(S("a"))
    assert (record.next_seq, record.slots.memory, record.cursor.turn_open) == (7 + 2 * len(steps), "m5", False)


async def test_a_holder_whose_lease_was_taken_is_fenced_out(store: BaseStore) -> None:
    """Once taken over, the old holder can neither append, renew nor release the new holder's lease."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    old, _ = await store.acquire_lease(S("a"), owner="paused", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=old)
    clock.now += 6000
    new, _ = await store.acquire_lease(S("a"), owner="next", ttl=5)
    head = (await store.get_session(S("a"))).next_seq
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2)[2:4], lease=old)
    assert info.value.code == "lease_lost" and info.value.details["holder"] == "next"
    with pytest.raises(SessionBusyError):
        await store.renew_lease(S("a"), old, ttl=5)
    await store.release_lease(S("a"), old)
    record = await store.get_session(S("a"))
    assert record.next_seq == head and record.lease == new


async def test_a_lapsed_lease_nobody_took_still_lets_its_holder_write(store: BaseStore) -> None:
    """Expiry alone does not fence: the token is checked, so a slow holder nobody replaced goes on."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="slow", ttl=5)
    clock.now += 60_000
    written = await store.append(S("a"), turn(2), lease=lease)
    assert written[-1].type == "turn/end"


async def test_without_the_lease_only_free_standing_slot_events_land(store: BaseStore) -> None:
    """While a lease is live, others may put memory or an insight, but not open or write a turn."""
    Clock(store)
    await with_turns(store, "a", 1)
    await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2))
    assert info.value.code == "session_busy"
    with pytest.raises(SessionBusyError):
        await store.append_batches({S("a"): [make_event("session/archived")]})
    await store.append(S("a"), [make_event("memory/put", {"content": "m"})])
    await store.append_batches({S("a"): [make_event("insight/put", {"content": "i"})]})
    record = await store.get_session(S("a"))
    assert (record.slots.memory, record.slots.insight, record.next_seq) == ("m", "i", 9)


async def test_anyone_may_write_when_no_lease_is_live(store: BaseStore) -> None:
    """With no lease, or only a lapsed one, an append without a lease is accepted as before."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    await store.append(S("a"), turn(2))
    await store.acquire_lease(S("a"), owner="gone", ttl=5)
    clock.now += 5000
    assert (await store.append(S("a"), turn(3)))[-1].seq == 18


async def test_a_released_lease_cannot_write(store: BaseStore) -> None:
    """A token is good for one grant: after release it is refused (lease_lost)."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    await store.release_lease(S("a"), lease)
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), turn(2), lease=lease)
    assert info.value.code == "lease_lost"


async def test_a_last_write_can_release_the_lease_in_its_own_transaction(store: BaseStore) -> None:
    """``release_lease`` writes the batch and frees the session at once; the token is then spent."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    await store.append(S("a"), turn(2)[:2], lease=lease)
    written = await store.append(S("a"), turn(2)[2:], lease=lease, release_lease=True)
    record = await store.get_session(S("a"))
    assert written[-1].type == "turn/end" and record.next_seq == 13 and record.lease is None
    with pytest.raises(SessionBusyError) as info:
        await store.append(S("a"), [make_event("memory/put", {"content": "m"})], lease=lease)
    assert info.value.code == "lease_lost"
    second, _ = await store.acquire_lease(S("a"), owner="writer-2", ttl=5)
    assert (await store.get_session(S("a"))).lease == second


async def test_a_refused_releasing_write_keeps_the_lease(store: BaseStore) -> None:
    """A batch refused (stale head, bad event) releases nothing; a release needs a lease to name."""
    Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=5)
    with pytest.raises(ConflictError):
        await store.append(S("a"), turn(2), expected_seq=3, lease=lease, release_lease=True)
    with pytest.raises(InvariantError):
        await store.append(S("a"), turn(2)[1:], lease=lease, release_lease=True)
    assert (await store.get_session(S("a"))).lease == lease
    with pytest.raises(UsageError):
        await store.append(S("a"), turn(2), release_lease=True)
    assert (await store.get_session(S("a"))).next_seq == 7


async def test_a_waiting_writer_gets_the_lease_when_it_is_released(store: BaseStore) -> None:
    """With ``wait``, a second writer queues behind the holder instead of failing."""
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=30)

    async def release_soon() -> None:
        await asyncio.sleep(0.05)
        await store.release_lease(S("a"), lease)

    releaser = asyncio.create_task(release_soon())
    second, _ = await store.acquire_lease(S("a"), owner="writer-2", ttl=30, wait=10)
    await releaser
    assert (await store.get_session(S("a"))).lease == second


async def test_lease_arguments_and_unknown_sessions_are_refused(store: BaseStore) -> None:
    """A non-positive ttl or a negative wait is a usage error; an unknown session is not found."""
    await with_turns(store, "a", 1)
    with pytest.raises(UsageError):
        await store.acquire_lease(S("a"), owner="w", ttl=0)
    with pytest.raises(UsageError):
        await store.acquire_lease(S("a"), owner="w", wait=-1)
    with pytest.raises(NotFoundError):
        await store.acquire_lease(S("nope"), owner="w")


async def test_repair_leaves_a_live_writers_turn_alone(store: BaseStore) -> None:
    """Repair refuses a turn whose writer still holds the lease, and closes it once the lease lapsed."""
    clock = Clock(store)
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="live", ttl=5)
    await store.append(S("a"), open_tool_turn(2), lease=lease)
    with pytest.raises(SessionBusyError):
        await store.repair(S("a"))
    assert (await store.get_session(S("a"))).cursor.turn_open
    clock.now += 5000
    closers = await store.repair(S("a"))
    assert closers[-1].data["reason"] == "interrupted"
    record = await store.get_session(S("a"))
    assert not record.cursor.turn_open and record.lease is None


async def test_lease_survives_reopen(store: BaseStore, reopen: Any) -> None:
    """The lease is stored with the session: a reopened store still keeps other writers out."""
    await with_turns(store, "a", 1)
    lease, _ = await store.acquire_lease(S("a"), owner="writer-1", ttl=30)
    store = await reopen(store)
    assert (await store.get_session(S("a"))).lease == lease
    with pytest.raises(SessionBusyError):
        await store.append(S("a"), turn(2))


# -- claims: background work done once ------------------------------------------------------------


async def test_a_claim_is_exclusive_until_released_or_lapsed(store: BaseStore) -> None:
    """One claim per key at a time; another key is independent; release or expiry frees the key."""
    clock = Clock(store)
    first = await store.claim("consolidate:a", owner="w1", ttl=5)
    assert first is not None and first.expires_at == clock.now + 5000
    assert await store.claim("consolidate:a", owner="w2", ttl=5) is None
    assert await store.claim("consolidate:b", owner="w2", ttl=5) is not None
    await store.release_claim(first)
    second = await store.claim("consolidate:a", owner="w2", ttl=5)
    assert second is not None
    clock.now += 5000
    third = await store.claim("consolidate:a", owner="w3", ttl=5)
    assert third is not None
    await store.release_claim(second)  # a lapsed claim's release leaves its successor alone
    assert await store.claim("consolidate:a", owner="w4", ttl=5) is None


async def test_claim_arguments_are_checked(store: BaseStore) -> None:
    """An empty key or a non-positive ttl is a usage error."""
    with pytest.raises(UsageError):
        await store.claim("", owner="w", ttl=5)
    with pytest.raises(UsageError):
        await store.claim("k", owner="w", ttl=0)


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
