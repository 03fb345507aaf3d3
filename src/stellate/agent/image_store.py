"""What `Agent` offers for images outside a turn: store one ahead of a turn, read one back, sweep unreferenced ones.

A base class of `Agent`, like `stellate.agent.reading.AgentReads`.
"""

from __future__ import annotations

from collections.abc import Sequence

from stellate.agent.images import ImageSource, load_image
from stellate.agent.parts import AgentParts
from stellate.errors import StoreError
from stellate.log.images import ImageRef
from stellate.store import BaseStore, SessionId
from stellate.store.blobs import BLOB_GRACE_MS, IMAGE_EVENT_TYPES, Blob, BlobStore, referenced_hashes

__all__ = ["AgentImages", "refers_to_images", "sweep_images_after_erase"]


class AgentImages(AgentParts):
    """Images by content address; `Agent` provides the store and the image policy."""

    async def _blobs(self) -> BlobStore:
        store = await self.store()
        if not isinstance(store, BlobStore):
            raise StoreError(f"{type(store).__name__} keeps no blobs, so it cannot hold images", code="unsupported")
        return store

    async def put_image(self, source: ImageSource) -> ImageRef:
        """Check an image (as a turn would) and store it; returns its reference, to send in a turn later.

        Raises:
            UsageError: ``not_an_image``, ``image_too_large``, ``image_path_refused`` or ``image_unreachable``.
        """
        image = await load_image(source, self.image_policy)
        assert image.data is not None
        await (await self._blobs()).put_blob(image.data, media_type=image.media_type)
        return image

    async def get_image(self, sha256: str) -> Blob:
        """The stored image under ``sha256``; raises `NotFoundError` (code ``blob_not_found``) when there is none."""
        return await (await self._blobs()).get_blob(sha256)

    async def delete_unreferenced_images(self, *, grace_ms: int = BLOB_GRACE_MS) -> list[str]:
        """Delete the stored images no session refers to any more (after an erase); returns their hashes."""
        return await (await self._blobs()).delete_unreferenced_blobs(grace_ms=grace_ms)


async def refers_to_images(store: BaseStore, session_ids: Sequence[str]) -> bool:
    """Whether any of the sessions' logs refers to an image (read before an erase)."""
    for session_id in session_ids:
        events = await store.read_events(SessionId(session_id), types=IMAGE_EVENT_TYPES)
        if referenced_hashes(e.data for e in events):
            return True
    return False


async def sweep_images_after_erase(store: BaseStore, *, had_images: bool) -> None:
    """Free the images no session refers to any more, after an erase.

    When the erased sessions held images, every unreferenced image of the space goes at once (grace 0), so the
    erased ones are gone with their sessions; an image uploaded for a turn that has not written its message yet
    goes too (that turn then answers ``blob_not_found`` and is sent again). Otherwise the usual grace applies.
    """
    if isinstance(store, BlobStore):
        await store.delete_unreferenced_blobs(grace_ms=0 if had_images else BLOB_GRACE_MS)
