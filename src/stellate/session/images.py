"""A session's images: stored as blobs before the message that refers to them, attached again for each call.

The log holds references only (`stellate.log.images`); the bytes are put in the store's blobs when a turn opens
and read back when a model call needs them, then kept in a bounded cache of the session. Finding the messages
that carry images costs a scan of the context only for what is new since the last call: a session's next
context starts with the previous one's messages, so one list comparison (in C, identical objects compare at
once) stands for the rest, and a long history without images adds next to nothing to a call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from itertools import islice
from typing import Final

from stellate.errors import StoreError, UsageError
from stellate.log.images import ImageRef, image_ref_of
from stellate.log.messages import Message, ToolMessage, UserMessage
from stellate.store.blobs import BlobStore

__all__ = ["CACHED_IMAGE_BYTES", "SessionImages"]

CACHED_IMAGE_BYTES: Final = 32 * 1024 * 1024
"""Image bytes a session keeps in memory between calls (least recently used are read again from the store)."""


_REFUSED_NOTE = (
    "\n\n[Note from stellate: {count} of the tool's images were not PNG, JPEG, GIF or WebP and were left out.]"
)


def _blobs(store: object) -> BlobStore:
    if not isinstance(store, BlobStore):
        raise StoreError(f"{type(store).__name__} keeps no blobs, so it cannot hold images", code="unsupported")
    return store


def _has_images(message: Message) -> bool:
    return isinstance(message, UserMessage | ToolMessage) and bool(message.images)


class SessionImages:
    """Stores a turn's new images and attaches the bytes of every image in a context."""

    def __init__(self, *, cached_bytes: int = CACHED_IMAGE_BYTES) -> None:
        self._bytes: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = cached_bytes
        self._held = 0
        self._prefix: list[Message] = []
        self._with_images: list[int] = []
        """Positions in ``_prefix`` of the messages that carry images."""

    async def store(self, store: object, images: Sequence[ImageRef]) -> None:
        """Put each image's bytes in the store's blobs (again, if present: that refreshes its age for the sweep)."""
        for image in images:
            assert image.data is not None, "a new image carries its bytes"
            await _blobs(store).put_blob(image.data, media_type=image.media_type)
            self._keep(image.sha256, image.data)

    async def store_tool_images(self, store: object, images: Sequence[bytes]) -> tuple[tuple[ImageRef, ...], str]:
        """Store the images a tool returned; returns their references and a note naming any that is no image."""
        refs: list[ImageRef] = []
        refused = 0
        for data in images:
            try:
                refs.append(image_ref_of(data))
            except UsageError:
                refused += 1
        await self.store(store, refs)
        note = _REFUSED_NOTE.format(count=refused) if refused else ""
        return tuple(replace(r, data=None) for r in refs), note

    async def attach(self, store: object, messages: Sequence[Message]) -> Sequence[Message]:
        """``messages`` with the bytes of every image attached (``messages`` itself when none carries an image)."""
        positions = self._positions(messages)
        if not positions:
            return messages
        out = list(messages)
        for at in positions:
            message = out[at]
            assert isinstance(message, UserMessage | ToolMessage)
            images = tuple([await self._attached(store, image) for image in message.images])
            out[at] = replace(message, images=images)
        return out

    def _positions(self, messages: Sequence[Message]) -> list[int]:
        known = len(self._prefix)
        if known and len(messages) >= known and list(islice(messages, known)) == self._prefix:
            start, found = known, list(self._with_images)
        else:
            start, found = 0, []
        found += [at for at in range(start, len(messages)) if _has_images(messages[at])]
        # Kept as given: a context is built afresh for each call and never changed afterwards.
        self._prefix, self._with_images = messages if isinstance(messages, list) else list(messages), found
        return found

    async def _attached(self, store: object, image: ImageRef) -> ImageRef:
        if image.data is not None:
            return image
        data = self._bytes.get(image.sha256)
        if data is None:
            data = (await _blobs(store).get_blob(image.sha256)).data
            self._keep(image.sha256, data)
        else:
            self._bytes.move_to_end(image.sha256)
        return replace(image, data=data)

    def _keep(self, sha256: str, data: bytes) -> None:
        if sha256 in self._bytes:
            self._bytes.move_to_end(sha256)
            return
        self._bytes[sha256] = data
        self._held += len(data)
        while self._held > self._cached_bytes and len(self._bytes) > 1:
            _, dropped = self._bytes.popitem(last=False)
            self._held -= len(dropped)
