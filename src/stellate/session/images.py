"""A session's images: stored as blobs before the message that refers to them, attached again for each call.

The log holds references only (`stellate.log.images`); the bytes are put in the store's blobs when the turn
opens and read back (once per turn) when a model call needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from stellate.errors import StoreError
from stellate.log.images import ImageRef
from stellate.log.messages import Message, ToolMessage, UserMessage
from stellate.store.blobs import BlobStore

__all__ = ["ImageCache", "attach_images", "store_images"]

ImageCache = dict[str, bytes]
"""Bytes already read in this turn, by sha256."""


def _blobs(store: object) -> BlobStore:
    if not isinstance(store, BlobStore):
        raise StoreError(f"{type(store).__name__} keeps no blobs, so it cannot hold images", code="unsupported")
    return store


async def store_images(store: object, images: Sequence[ImageRef], cache: ImageCache) -> None:
    """Put each image's bytes in the store's blobs (again, if present: that refreshes its age for the sweep)."""
    for image in images:
        assert image.data is not None, "a new image carries its bytes"
        await _blobs(store).put_blob(image.data, media_type=image.media_type)
        cache[image.sha256] = image.data


async def attach_images(store: object, messages: Sequence[Message], cache: ImageCache) -> list[Message]:
    """``messages`` with the bytes of every image attached (messages without images are passed as they are)."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, UserMessage | ToolMessage) and message.images:
            images = tuple([await _attached(store, image, cache) for image in message.images])
            message = replace(message, images=images)
        out.append(message)
    return out


async def _attached(store: object, image: ImageRef, cache: ImageCache) -> ImageRef:
    if image.data is not None:
        return image
    data = cache.get(image.sha256)
    if data is None:
        data = cache[image.sha256] = (await _blobs(store).get_blob(image.sha256)).data
    return replace(image, data=data)
