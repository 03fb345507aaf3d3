"""Images given to a turn: bytes, a file path or a URL, turned into checked `ImageRef` values with their bytes.

A source is checked before anything is written: its bytes must be a PNG, JPEG, GIF or WebP image (by magic number,
``not_an_image``) of at most `ImagePolicy.max_bytes` (``image_too_large``); a path must lie under
`ImagePolicy.read_root` when one is set (``image_path_refused``); a URL is fetched with a timeout and the same size
limit (``image_unreachable`` when it cannot be). The server takes uploaded bytes only (its policy refuses paths
and URLs), so a request can never make it read a file or reach another host.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from stellate.errors import UsageError
from stellate.log.images import ImageRef, image_ref_of

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "SERVER_IMAGE_POLICY",
    "ImagePolicy",
    "ImageSource",
    "load_image",
    "load_images",
    "too_large",
]

ImageSource: TypeAlias = bytes | os.PathLike[str] | str | ImageRef
"""Raw bytes, a file path, an ``http(s)://`` URL (any other string is a path), or a reference with its bytes."""

DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""5 MiB: Anthropic's limit per image (OpenAI's is higher)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePolicy:
    """What a turn may be given as images."""

    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
    """Largest image accepted, in bytes."""
    fetch_timeout: float = 10.0
    """Seconds a URL has to deliver the whole image."""
    allow_paths: bool = True
    """Whether file paths are read at all."""
    read_root: Path | None = None
    """When set, only files under this directory are read (after resolving links)."""
    allow_urls: bool = True
    """Whether URLs are fetched."""


SERVER_IMAGE_POLICY = ImagePolicy(allow_paths=False, allow_urls=False)
"""The server's: uploaded bytes only."""


async def load_images(sources: Sequence[ImageSource], policy: ImagePolicy) -> tuple[ImageRef, ...]:
    """`load_image` for each source, in order."""
    return tuple([await load_image(source, policy) for source in sources])


async def load_image(source: ImageSource, policy: ImagePolicy) -> ImageRef:
    """The checked reference of one image source, its bytes attached.

    Raises:
        UsageError: code ``not_an_image``, ``image_too_large``, ``image_path_refused`` or ``image_unreachable``.
    """
    if isinstance(source, ImageRef) and source.data is not None:
        data = source.data
    elif isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
    elif isinstance(source, str) and source.startswith(("http://", "https://")):
        data = await _fetch(source, policy)
    elif isinstance(source, ImageRef):
        raise UsageError(f"image {source.sha256} comes without its bytes; load it first", code="usage_error")
    else:
        data = await asyncio.to_thread(_read_path, Path(source), policy)
    _check_size(len(data), policy)
    return image_ref_of(data)


def _check_size(size: int, policy: ImagePolicy) -> None:
    if size > policy.max_bytes:
        raise too_large(size, policy.max_bytes)


def too_large(size: int, limit: int) -> UsageError:
    """The error of an image over ``limit`` bytes."""
    return UsageError(
        f"the image has {size} bytes, more than the limit of {limit}; send a smaller image",
        code="image_too_large",
        size=size,
        limit=limit,
    )


def _read_path(path: Path, policy: ImagePolicy) -> bytes:
    if not policy.allow_paths:
        raise UsageError("images may not be read from files here; upload the bytes instead", code="image_path_refused")
    resolved = path.expanduser().resolve()
    if policy.read_root is not None and not resolved.is_relative_to(policy.read_root.resolve()):
        raise UsageError(
            f"{path} is outside {policy.read_root}, the only directory images may be read from; copy it there",
            code="image_path_refused",
            path=str(path),
        )
    try:
        with resolved.open("rb") as file:
            data = file.read(policy.max_bytes + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the image {path}: {exc.strerror}; check the path", code="io_error") from exc
    _check_size(len(data), policy)  # read one byte past the limit, never the whole of a huge file
    return data


async def _fetch(url: str, policy: ImagePolicy) -> bytes:
    if not policy.allow_urls:
        raise UsageError("images may not be fetched from URLs here; upload the bytes instead", code="image_unreachable")
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx comes with every extra that talks HTTP
        raise UsageError('fetching images needs httpx: pip install "stellate[openai]"', code="missing_extra") from exc
    try:
        async with asyncio.timeout(policy.fetch_timeout), httpx.AsyncClient(follow_redirects=True) as client:
            async with client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise _unreachable(url, f"it answered HTTP {response.status_code}")
                return await _body(response, policy)
    except (httpx.HTTPError, TimeoutError) as exc:
        reason = "it took too long" if isinstance(exc, TimeoutError) else type(exc).__name__
        raise _unreachable(url, reason) from exc


async def _body(response: Any, policy: ImagePolicy) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit():
        _check_size(int(declared), policy)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        _check_size(size, policy)  # stop reading as soon as the body passes the limit
        chunks.append(chunk)
    return b"".join(chunks)


def _unreachable(url: str, reason: str) -> UsageError:
    return UsageError(f"cannot fetch the image at {url}: {reason}; check the URL", code="image_unreachable", url=url)
