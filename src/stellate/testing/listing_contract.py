"""The listing contract: keyset pages of the session listing (`Store.list_digests_page`, `list_sessions_page`).

Pages concatenate to the full listing, stay stable while sessions are created and written, keep an archived
session in its place, and refuse a cursor naming no session of the space. Handed over by `store_contract`.
"""

from __future__ import annotations

import pytest

from stellate.errors import UsageError
from stellate.log import make_event
from stellate.store import BaseStore, CompletedTurn, ForkRequest, SessionId
from stellate.store.digests import SessionDigest, node_of
from stellate.testing.approval_contract import paused_turn
from stellate.testing.contract_support import S, turn


async def _forest(store: BaseStore, size: int) -> None:
    """``size`` sessions ``s0``.. in creation order: every third a root, the others children of the root before."""
    root = None
    for i in range(size):
        parent = None if i % 3 == 0 else root
        record = await store.create_session(session_id=S(f"s{i}"), parent_id=parent)
        root = record.id if parent is None else root


async def _all_pages(
    store: BaseStore, limit: int, parent_id: SessionId | None = None, status: str | None = None
) -> list[SessionDigest]:
    out: list[SessionDigest] = []
    after: SessionId | None = None
    while True:
        page = await store.list_digests_page(after=after, limit=limit, parent_id=parent_id, status=status)
        assert len(page) <= limit
        out += page
        if len(page) < limit:
            return out
        after = S(page[-1].id)


async def test_digest_pages_concatenate_to_the_full_listing(store: BaseStore) -> None:
    """For any page size, the pages in turn hold every digest once, in creation order, equal to `list_digests`."""
    await _forest(store, 11)
    await store.append(S("s4"), [make_event("session/archived")])
    full = await store.list_digests()
    assert [d.id for d in full] == [f"s{i}" for i in range(11)]
    for limit in (1, 2, 3, 5, 11, 50):
        assert await _all_pages(store, limit) == full, limit
    assert await store.list_digests_page(limit=4) == full[:4]
    assert await store.list_digests_page(after=S("s10"), limit=4) == []


async def test_record_pages_concatenate_to_the_full_listing(store: BaseStore) -> None:
    """`list_sessions_page` pages are `list_sessions` cut in order (the records in full)."""
    await _forest(store, 7)
    full = await store.list_sessions()
    pages, after = [], None
    while page := await store.list_sessions_page(after=after, limit=3):
        pages += page
        after = page[-1].id
    assert pages == full
    assert await store.list_sessions_page(after=S("s2"), limit=2) == full[3:5]


async def test_node_pages_are_the_childless_nodes_of_the_records(store: BaseStore) -> None:
    """`list_nodes_page` pages give each session's node as its record says (inherited and awaiting counts too)."""
    await store.create_session(session_id=S("src"), events=turn(1))
    await store.append(S("src"), paused_turn(2))
    await store.create_session(
        session_id=S("kid"), parent_id=S("src"), fork=ForkRequest(source_id=S("src"), point=CompletedTurn())
    )
    await _forest(store, 5)
    expected = [node_of(r) for r in await store.list_sessions()]
    assert (expected[0].awaiting_approval, expected[1].inherited_turns) == (1, 1)
    nodes, after = [], None
    while page := await store.list_nodes_page(after=after, limit=2):
        nodes += page
        after = S(page[-1].id)
    assert nodes == expected
    assert all(n.children == [] and n.depth == 0 for n in nodes)
    with pytest.raises(UsageError):
        await store.list_nodes_page(after=S("nope"))


async def test_filtered_pages_list_children_or_a_status_in_creation_order(store: BaseStore) -> None:
    """``parent_id`` keeps the children of one session, ``status`` one status; the cursor may name any session."""
    await _forest(store, 9)
    await store.append(S("s1"), [make_event("session/archived")])
    await store.append(S("s7"), [make_event("session/archived")])
    full = await store.list_digests()
    assert await _all_pages(store, 2, parent_id=S("s3")) == [d for d in full if d.parent_id == "s3"]
    archived = await _all_pages(store, 1, status="archived")
    assert [d.id for d in archived] == ["s1", "s7"]
    assert [d.id for d in await store.list_digests_page(after=S("s2"), limit=5, status="active")] == [
        "s3",
        "s4",
        "s5",
        "s6",
        "s8",
    ]


async def test_pages_are_stable_while_the_forest_grows_and_changes(store: BaseStore) -> None:
    """Sessions created while a reader pages come at the end; writes and archives move nobody."""
    await _forest(store, 6)
    first = await store.list_digests_page(limit=3)
    await store.create_session(session_id=S("late"), parent_id=S("s0"))
    await store.append(S("s1"), turn(1))
    await store.append(S("s4"), [make_event("session/archived")])
    await store.append(S("s2"), [make_event("session/archived")])  # the cursor's own session is archived
    rest = await _all_pages_after(store, S(first[-1].id))
    assert [d.id for d in first + rest] == [*(f"s{i}" for i in range(6)), "late"]
    assert [d.id for d in await store.list_digests()] == [d.id for d in first + rest]
    assert {d.id: d.status for d in rest}["s4"] == "archived"


async def _all_pages_after(store: BaseStore, after: SessionId) -> list[SessionDigest]:
    out: list[SessionDigest] = []
    while page := await store.list_digests_page(after=after, limit=2):
        out += page
        after = S(page[-1].id)
    return out


async def test_a_cursor_naming_no_session_of_the_space_is_refused(store: BaseStore) -> None:
    """A made-up id, another space's session, an erased one: `UsageError` ``bad_cursor``, for both listings."""
    await _forest(store, 3)
    await store.in_space("other").create_session(session_id=S("theirs"))
    await store.erase_sessions([S("s2")])
    for after in ("nope", "theirs", "s2"):
        with pytest.raises(UsageError) as raised:
            await store.list_digests_page(after=S(after), limit=10)
        assert raised.value.code == "bad_cursor", after
        with pytest.raises(UsageError) as raised:
            await store.list_sessions_page(after=S(after), limit=10)
        assert raised.value.code == "bad_cursor", after
    assert [d.id for d in await store.list_digests_page(after=S("s0"), limit=10)] == ["s1"]


__all__ = [name for name in dir() if name.startswith("test_")]  # what `import *` hands a backend's test module
