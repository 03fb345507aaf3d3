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
