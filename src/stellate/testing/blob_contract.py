"""The blob rules of the store contract (`stellate.store.blobs`), over the same ``store`` fixture.

`stellate.testing.store_contract` re-exports these tests, so ``from stellate.testing.store_contract import *`` runs
them; import this module alone to run only them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from stellate.errors import NotFoundError
from stellate.log import NewEvent, make_event
from stellate.store import BaseStore, ForkRequest
from stellate.store.blobs import BLOB_GRACE_MS, BlobStore
from stellate.testing.contract_support import Clock, S, turn

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256))


def blobs(store: BaseStore) -> BlobStore:
    """The store as a `BlobStore` (every backend that runs this contract is one)."""
    assert isinstance(store, BlobStore), f"{type(store).__name__} keeps no blobs"
    return store


def image_turn(n: int, *hashes: str) -> list[NewEvent]:
    """A completed turn whose user message refers to images by hash."""
    events = turn(n, user="look")
    refs = [{"sha256": h, "media_type": "image/png", "bytes": 1} for h in hashes]
    events[1] = make_event("user/message", {"content": "look", "images": refs})
    return events


async def test_a_blob_is_stored_under_its_sha256_and_read_back_byte_for_byte(store: BaseStore) -> None:
    """``put_blob`` returns the hex sha256 of the bytes; ``get_blob`` gives the same bytes and media type."""
    sha = await blobs(store).put_blob(PNG, media_type="image/png")
    assert sha == hashlib.sha256(PNG).hexdigest()
    blob = await blobs(store).get_blob(sha)
    assert (blob.data, blob.media_type, blob.sha256) == (PNG, "image/png", sha)


async def test_putting_the_same_bytes_twice_stores_them_once(store: BaseStore) -> None:
    """Content addressing: a second put of equal bytes yields the same hash and one blob."""
    first = await blobs(store).put_blob(JPEG, media_type="image/jpeg")
    second = await blobs(store).put_blob(JPEG, media_type="image/jpeg")
    assert first == second
    assert await blobs(store).has_blobs([first, "0" * 64]) == {first}


async def test_an_unknown_hash_is_blob_not_found(store: BaseStore) -> None:
    """Reading a hash the space never stored raises `NotFoundError` with code ``blob_not_found``."""
    with pytest.raises(NotFoundError) as caught:
        await blobs(store).get_blob("f" * 64)
    assert caught.value.code == "blob_not_found"


async def test_blobs_of_one_space_are_invisible_from_another(store: BaseStore) -> None:
    """A blob belongs to the space it was put in: another space neither reads nor sees it."""
    sha = await blobs(store).put_blob(PNG, media_type="image/png")
    other = blobs(store.in_space("other"))
    assert await other.has_blobs([sha]) == set()
    with pytest.raises(NotFoundError):
        await other.get_blob(sha)


async def test_the_sweep_deletes_only_old_blobs_no_event_refers_to(store: BaseStore) -> None:
    """``delete_unreferenced_blobs`` keeps referenced blobs and blobs younger than the grace period."""
    clock = Clock(store)
    used = await blobs(store).put_blob(PNG, media_type="image/png")
    unused = await blobs(store).put_blob(JPEG, media_type="image/jpeg")
    await store.create_session(session_id=S("a"), events=[make_event("session/created", {"label": "a"})])
    await store.append(S("a"), image_turn(1, used))
    assert await blobs(store).delete_unreferenced_blobs() == []  # both are younger than the grace period
    clock.now += BLOB_GRACE_MS + 1
    assert await blobs(store).delete_unreferenced_blobs() == [unused]
    assert await blobs(store).has_blobs([used, unused]) == {used}


async def test_a_fork_keeps_the_blobs_of_its_inherited_prefix(store: BaseStore) -> None:
    """A child refers to its source's images through the inherited prefix: they stay readable and swept never."""
    clock = Clock(store)
    sha = await blobs(store).put_blob(PNG, media_type="image/png")
    await store.create_session(session_id=S("src"), events=[make_event("session/created", {"label": "s"})])
    await store.append(S("src"), image_turn(1, sha))
    await store.create_session(session_id=S("kid"), fork=ForkRequest(source_id=S("src")))
    events = await store.read_events(S("kid"), types=["user/message"])
    assert [i["sha256"] for i in events[0].data["images"]] == [sha]
    clock.now += BLOB_GRACE_MS + 1
    assert await blobs(store).delete_unreferenced_blobs() == []
    assert (await blobs(store).get_blob(sha)).data == PNG


async def test_a_put_refreshes_the_age_so_a_sweep_spares_a_blob_about_to_be_referenced(store: BaseStore) -> None:
    """Putting an old unreferenced blob again restarts its grace period."""
    clock = Clock(store)
    sha = await blobs(store).put_blob(PNG, media_type="image/png")
    clock.now += BLOB_GRACE_MS + 1
    await blobs(store).put_blob(PNG, media_type="image/png")
    assert await blobs(store).delete_unreferenced_blobs() == []
    clock.now += BLOB_GRACE_MS + 1
    assert await blobs(store).delete_unreferenced_blobs() == [sha]


async def test_blobs_survive_a_reopen(store: BaseStore, reopen: Any) -> None:
    """A stored blob is still there after the store is closed and opened again (memory: the same object)."""
    sha = await blobs(store).put_blob(PNG, media_type="image/png")
    again = await reopen(store)
    assert (await blobs(again).get_blob(sha)).data == PNG
