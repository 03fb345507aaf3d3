"""`SessionImages`: attaching image bytes to a context, reading each blob once, scanning only what is new."""

from __future__ import annotations

import pytest

from stellate.errors import NotFoundError
from stellate.log.images import image_ref_of
from stellate.log.messages import AssistantMessage, Message, UserMessage
from stellate.session.images import SessionImages
from stellate.store.memory import MemoryStore
from stellate.testing.images import png


class CountingStore(MemoryStore):
    """A memory store that counts blob reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get_blob(self, sha256: str):  # type: ignore[no-untyped-def]
        self.reads += 1
        return await super().get_blob(sha256)


def without_bytes(message: UserMessage) -> UserMessage:
    from dataclasses import replace

    return replace(message, images=tuple(replace(i, data=None) for i in message.images))


async def test_the_bytes_of_every_image_are_attached_and_read_once() -> None:
    """Images of the history come back with their bytes; the store is read once per image, not per call."""
    store, images = CountingStore(), SessionImages()
    red = image_ref_of(png(2, 2))
    await store.put_blob(png(2, 2), media_type="image/png")
    history: list[Message] = [without_bytes(UserMessage(content="look", images=(red,))), AssistantMessage(content="ok")]
    for call in range(3):
        attached = await images.attach(store, [*history, UserMessage(content=f"again {call}")])
        first = attached[0]
        assert isinstance(first, UserMessage) and first.images[0].data == png(2, 2)
    assert store.reads == 1


async def test_a_context_that_grew_is_scanned_only_past_what_was_seen() -> None:
    """An image in a message appended after the last call is found; the earlier ones stay attached."""
    store, images = MemoryStore(), SessionImages()
    for data in (png(1, 1), png(3, 3)):
        await store.put_blob(data, media_type="image/png")
    one = without_bytes(UserMessage(content="a", images=(image_ref_of(png(1, 1)),)))
    two = without_bytes(UserMessage(content="b", images=(image_ref_of(png(3, 3)),)))
    await images.attach(store, [one])
    attached = await images.attach(store, [one, AssistantMessage(content="ok"), two])
    assert [m.images[0].data for m in attached if isinstance(m, UserMessage)] == [png(1, 1), png(3, 3)]


async def test_a_blob_the_store_lost_is_blob_not_found() -> None:
    """A reference whose blob is gone raises `NotFoundError` ``blob_not_found`` instead of sending nothing."""
    lost = without_bytes(UserMessage(content="a", images=(image_ref_of(png(1, 1)),)))
    with pytest.raises(NotFoundError) as caught:
        await SessionImages().attach(MemoryStore(), [lost])
    assert caught.value.code == "blob_not_found"


async def test_the_cache_is_bounded() -> None:
    """Past its byte budget the cache drops the least recently used image (it is read again when needed)."""
    store, images = CountingStore(), SessionImages(cached_bytes=len(png(4, 4)) + 1)
    refs = []
    for side in (4, 5):
        await store.put_blob(png(side, side), media_type="image/png")
        refs.append(without_bytes(UserMessage(content="x", images=(image_ref_of(png(side, side)),))))
    await images.attach(store, [refs[0]])
    await images.attach(store, [refs[1]])
    await images.attach(store, [refs[0]])
    assert store.reads == 3
