"""Small valid images built from bytes, for tests and examples (no imaging library needed).

`png` makes a real, decodable PNG of one colour; `jpeg_header`, `gif_header` and `webp_header` make just enough of
each format for sniffing and size reading.
"""

from __future__ import annotations

import struct
import zlib

__all__ = ["gif_header", "jpeg_header", "png", "webp_header"]


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    """A decodable RGB PNG of ``width`` x ``height`` pixels, all of colour ``rgb``."""
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(row * height))
        + _chunk(b"IEND", b"")
    )


def jpeg_header(width: int, height: int) -> bytes:
    """The start of a baseline JPEG: SOI, an APP0 segment and the frame header giving the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0


def gif_header(width: int, height: int) -> bytes:
    """A GIF89a header with its logical screen size."""
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00"


def webp_header(width: int, height: int) -> bytes:
    """A RIFF/WEBP header with an extended (VP8X) chunk giving the canvas size."""
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    chunk = b"VP8X" + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk
