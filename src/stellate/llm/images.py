"""Images on the wire: the base64 payload of an attached `ImageRef`, and the ability to take images at all.

Messages carry images by reference; the session attaches their bytes (``ImageRef.data``) just before a call, and
each adapter writes them in its provider's own format. An adapter that cannot see images says so through
`ImageInput`; a turn with images is then refused before anything is written (code ``images_unsupported``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from stellate.errors import LLMError
from stellate.log.images import ImageRef
from stellate.log.messages import Message, ToolMessage, UserMessage

__all__ = ["ImageInput", "accepts_images", "has_images", "image_base64", "image_data_url", "images_unsupported"]


@runtime_checkable
class ImageInput(Protocol):
    """An adapter that says whether it can see images (adapters without it are assumed to)."""

    def accepts_images(self) -> bool:
        """Whether images in user messages (and tool results, where the provider allows) reach the model."""
        ...


def accepts_images(adapter: object) -> bool:
    """Whether ``adapter`` takes images: its `ImageInput` answer, else True."""
    return adapter.accepts_images() if isinstance(adapter, ImageInput) else True


def has_images(messages: Sequence[Message]) -> bool:
    """Whether any message carries an image."""
    return any(isinstance(m, UserMessage | ToolMessage) and m.images for m in messages)


def images_unsupported(provider: str, model: str) -> LLMError:
    """The error of images sent to a model that cannot see them."""
    return LLMError(
        f"the {provider} model {model!r} cannot see images; send text only or use a model that takes images",
        code="images_unsupported",
        provider=provider,
        model=model,
    )


def image_base64(image: ImageRef) -> str:
    """The attached bytes of ``image`` as base64 text.

    Raises:
        LLMError: the bytes were not attached (the store no longer holds the blob; code ``blob_not_found``).
    """
    if image.data is None:
        raise LLMError(
            f"the bytes of image {image.sha256} are not loaded; the store no longer holds them",
            code="blob_not_found",
            sha256=image.sha256,
        )
    return base64.b64encode(image.data).decode("ascii")


def image_data_url(image: ImageRef) -> str:
    """``image`` as a ``data:`` URL (what OpenAI-compatible servers take)."""
    return f"data:{image.media_type};base64,{image_base64(image)}"
