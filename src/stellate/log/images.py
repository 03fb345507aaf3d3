"""Images as the log refers to them: a content address, the media type and the size read from the header.

An image's bytes are stored once, beside the log, under their sha256 (``stellate.store.blobs``); events carry
only `ImageRef` (as JSON: ``{sha256, media_type, bytes, width, height}``). `sniff_image` tells an image from any
other bytes by its magic number and reads its pixel size from the header, without an imaging library.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Any, Final

from stellate.errors import UsageError

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "ImageRef",
    "image_ref_of",
    "images_from_json",
    "images_to_json",
    "sniff_image",
]

#: The formats every provider stellate speaks to accepts.
IMAGE_MEDIA_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageRef:
    """One image in a message: its content address and what its header says."""

    sha256: str
    """Hex sha256 of the bytes: the key of the blob in the store."""
    media_type: str
    """One of `IMAGE_MEDIA_TYPES`."""
    size: int
    """Length of the bytes."""
    width: int | None = None
    """Pixels, when the header says (token estimates use it)."""
    height: int | None = None
    data: bytes | None = field(default=None, compare=False, repr=False)
    """The bytes, attached just before a model call; never written to the log."""

    def to_json(self) -> dict[str, Any]:
        """The reference as event data (without the bytes)."""
        out: dict[str, Any] = {"sha256": self.sha256, "media_type": self.media_type, "bytes": self.size}
        if self.width is not None and self.height is not None:
            out.update(width=self.width, height=self.height)
        return out


def images_to_json(images: tuple[ImageRef, ...]) -> list[dict[str, Any]]:
    """References as the JSON list an event's ``images`` field holds."""
    return [image.to_json() for image in images]


def images_from_json(raw: object) -> tuple[ImageRef, ...]:
    """Inverse of `images_to_json`; a missing field (an event of an older stellate) gives no images."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        ImageRef(
            sha256=item["sha256"],
            media_type=item["media_type"],
            size=item["bytes"],
            width=item.get("width"),
            height=item.get("height"),
        )
        for item in raw
    )


def image_ref_of(data: bytes) -> ImageRef:
    """The reference of ``data`` (hash, type and size), keeping the bytes attached.

    Raises:
        UsageError: ``data`` is not a PNG, JPEG, GIF or WebP image (code ``not_an_image``).
    """
    media_type, width, height = sniff_image(data)
    digest = hashlib.sha256(data).hexdigest()
    return ImageRef(sha256=digest, media_type=media_type, size=len(data), width=width, height=height, data=data)


def sniff_image(data: bytes) -> tuple[str, int | None, int | None]:
    """The media type of ``data`` by its magic number, and its width and height when the header holds them.

    Raises:
        UsageError: ``data`` is none of `IMAGE_MEDIA_TYPES` (code ``not_an_image``).
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png", *_png_size(data)
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg", *_jpeg_size(data)
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif", *_unpack("<HH", data, 6)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp", *_webp_size(data)
    raise UsageError("the data is not a PNG, JPEG, GIF or WebP image; send one of those formats", code="not_an_image")


def _unpack(layout: str, data: bytes, at: int) -> tuple[int | None, int | None]:
    if len(data) < at + struct.calcsize(layout):
        return None, None
    width, height = struct.unpack_from(layout, data, at)
    return int(width), int(height)


def _png_size(data: bytes) -> tuple[int | None, int | None]:
    # The first chunk is IHDR: length (4), type (4), then width and height as big-endian u32.
    return _unpack(">II", data, 16) if data[12:16] == b"IHDR" else (None, None)


_JPEG_FRAMES: Final = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_size(data: bytes) -> tuple[int | None, int | None]:
    # Walk the segments to the first start-of-frame marker: precision (1), height (2), width (2).
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None, None
        marker = data[at + 1]
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack_from(">HH", data, at + 5)
            return int(width), int(height)
        (length,) = struct.unpack_from(">H", data, at + 2)
        at += 2 + int(length)
    return None, None


def _webp_size(data: bytes) -> tuple[int | None, int | None]:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        return width, int.from_bytes(data[27:30], "little") + 1
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack_from("<HH", data, 26)
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None, None
