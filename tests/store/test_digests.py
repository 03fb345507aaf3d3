"""Digest listings on every backend: the narrow query gives exactly the digests of the full records."""

from __future__ import annotations

from stellate.log import make_event
from stellate.store import BaseStore, Boundary, ForkRequest
from stellate.store.digests import digest_of


async def test_list_digests_matches_the_digest_of_every_record_in_creation_order(store: BaseStore) -> None:
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
    assert (digests[0].memory, digests[0].insight) == ("m", "i")


async def test_a_digest_says_whether_a_turn_is_open(store: BaseStore) -> None:
    record = await store.create_session(events=[make_event("session/created", {"label": "s"})])
    await store.append(
        record.id, [make_event("turn/start", {"turn": 1}), make_event("user/message", {"content": "hi"})]
    )
    [digest] = await store.list_digests()
    assert digest.turn_open is True and digest == digest_of(await store.get_session(record.id))
