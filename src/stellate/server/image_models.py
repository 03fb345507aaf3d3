"""The API's image bodies: an image given to a turn or uploaded (base64 bytes, or the hash of an upload)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stellate.log.images import ImageRef

__all__ = ["SHA256_PATTERN", "ImageIn", "ImageOut", "UploadBody"]

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class ImageIn(BaseModel):
    """One image of a turn: its bytes in base64 (``data``), or the ``sha256`` an upload returned."""

    model_config = ConfigDict(extra="forbid")

    data: str | None = None
    """Standard base64 of a PNG, JPEG, GIF or WebP file (the whole request stays under the body limit)."""
    sha256: str | None = Field(None, pattern=SHA256_PATTERN)
    """Hash of an image uploaded with ``POST /v1/blobs`` to this space."""

    @model_validator(mode="after")
    def _one_of(self) -> ImageIn:
        if (self.data is None) == (self.sha256 is None):
            raise ValueError("give exactly one of data and sha256")
        return self


class UploadBody(BaseModel):
    """An image to store ahead of a turn."""

    model_config = ConfigDict(extra="forbid")

    data: str = Field(min_length=1)
    """Standard base64 of a PNG, JPEG, GIF or WebP file."""


class ImageOut(BaseModel):
    """A stored image: what a turn refers to it by."""

    sha256: str
    media_type: str
    bytes: int
    width: int | None = None
    height: int | None = None

    @classmethod
    def of(cls, image: ImageRef) -> ImageOut:
        """The body of a reference."""
        return cls(
            sha256=image.sha256, media_type=image.media_type, bytes=image.size, width=image.width, height=image.height
        )
