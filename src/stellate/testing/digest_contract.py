"""The digest contract: `Store.list_digests` agrees with the full records, as plain pytest tests.

A backend may answer listings from materialized columns (the SQL backends keep ``turn_open`` beside the cursor);
these rules hold it to what the records say. Run them beside the store contract, over the same fixtures::

    # tests/test_my_store.py
    from stellate.testing.digest_contract import *  # noqa: F403
    from stellate.testing.store_contract import *  # noqa: F403
"""

from __future__ import annotations

from typing import Any

from stellate.log import make_event
from stellate.store import BaseStore, Boundary, CompletedTurn, ForkRequest, SessionId
from stellate.store.digests import digest_of
from stellate.testing.contract_support import open_tool_turn, turn

S = SessionId


async def _open_flags(store: BaseStore) -> dict[str, bool]:
    """Each session's ``turn_open`` as listed, after checking every digest against its full record."""
    digests = await store.list_digests()
    assert digests == [digest_of(await store.get_session(S(d.id))) for d in digests]
    return {d.id: d.turn_open for d in digests}


async def test_list_digests_matches_the_digest_of_every_record_in_creation_order(store: BaseStore) -> None:
    """The listing holds one digest per session, in creation order, equal to the digest of its record."""
    root = await store.create_session(events=[make_event("session/created", {"label": "root"})])
    await store.append(
        root.id, [make_event("memory/put", {"content": "m"}), make_event("insight/put", {"content": "i"})]
    )
    child = await store.create_session(
        parent_id=root.id,
        fork=ForkRequest(source_id=root.id, point=Boundary(seq=0)),
        events=[make_event("session/created", {"label": "child"}), make_event("session/archived")],
    )
    digests = await store.list_digests()
    assert digests == [digest_of(r) for r in await store.list_sessions()]
    assert [(d.id, d.parent_id, d.status) for d in digests] == [
        (root.id, None, "active"),
        (child.id, root.id, "archived"),
    ]
    assert (digests[0].memory, digests[0].insight, digests[0].turn_count) == ("m", "i", 0)


async def test_a_digest_says_a_turn_is_open_exactly_while_it_is(store: BaseStore) -> None:
    """``turn_open`` turns on with turn/start and off with turn/end, through `append` and `append_batches`."""
    await store.create_session(session_id=S("a"))
    assert await _open_flags(store) == {"a": False}
    await store.append(S("a"), turn(1)[:2])
    assert await _open_flags(store) == {"a": True}
    await store.append(S("a"), turn(1)[2:])
    assert await _open_flags(store) == {"a": False}
    await store.append_batches({S("a"): turn(2)[:3]})
    assert await _open_flags(store) == {"a": True}
    await store.append_batches({S("a"): turn(2)[3:]})
    assert await _open_flags(store) == {"a": False}


async def test_a_session_created_inside_a_turn_lists_it_open(store: BaseStore) -> None:
    """First events that open a turn give a digest with ``turn_open`` from the start."""
    await store.create_session(session_id=S("a"), events=turn(1)[:2])
    assert await _open_flags(store) == {"a": True}


async def test_repair_closes_the_listed_open_turn(store: BaseStore) -> None:
    """After `repair` closes a dead writer's turn, the digest no longer says a turn is open."""
    await store.create_session(session_id=S("a"), events=turn(1))
    await store.append(S("a"), open_tool_turn(2))
    assert await _open_flags(store) == {"a": True}
    await store.repair(S("a"))
    assert await _open_flags(store) == {"a": False}


async def test_a_fork_of_a_source_inside_a_turn_starts_closed(store: BaseStore) -> None:
    """A child inherits up to a completed turn, so it lists no open turn while its source still does."""
    await store.create_session(session_id=S("src"), events=turn(1))
    await store.append(S("src"), open_tool_turn(2))
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src"), point=CompletedTurn()))
    assert await _open_flags(store) == {"src": True, "kid": False}
    await store.append(S("kid"), turn(2)[:2])
    assert await _open_flags(store) == {"src": True, "kid": True}


async def test_a_space_lists_only_its_own_digests(store: BaseStore) -> None:
    """`list_digests` of a space names its sessions only; the unscoped handle lists the default space."""
    await store.in_space("alpha").create_session(session_id=S("a1"), events=turn(1)[:2])
    await store.in_space("beta").create_session(session_id=S("b1"))
    assert await _open_flags(store.in_space("alpha")) == {"a1": True}
    assert await _open_flags(store.in_space("beta")) == {"b1": False}
    assert await store.list_digests() == []


async def test_digests_survive_a_reopen(store: BaseStore, reopen: Any) -> None:
    """Closed and opened again, a store lists the same digests, open turns included."""
    await store.create_session(session_id=S("a"), events=turn(1))
    await store.create_session(session_id=S("b"), events=turn(1)[:2])
    before = await store.list_digests()
    store = await reopen(store)
    assert await store.list_digests() == before
    assert await _open_flags(store) == {"a": False, "b": True}


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
