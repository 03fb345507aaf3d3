"""Images by content address: upload one (base64 JSON, answered with its sha256) and serve one to the UI.

Served bytes are this space's own uploads, sent with the media type their magic number gives (never a stored
label), ``nosniff``, a sandboxing CSP and long-lived private caching (a hash never changes its content).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Header, Path, Response

from stellate.agent.images import load_image
from stellate.errors import UsageError
from stellate.log.images import ImageRef, sniff_image
from stellate.server.image_models import SHA256_PATTERN, ImageIn, ImageOut, UploadBody
from stellate.server.problems import problem_responses
from stellate.server.state import Caller, CallerDep

__all__ = ["router", "turn_images"]

router = APIRouter(tags=["images"])

_SERVED_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, max-age=31536000, immutable",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}


@router.post("/blobs", response_model=ImageOut, status_code=201, responses=problem_responses(413, 422))
async def upload_image(body: UploadBody, caller: CallerDep) -> ImageOut:
    """Store an image for later turns (``images: [{"sha256": ...}]``); the same bytes twice are stored once.

    Past the server's image limit the answer is 413 ``image_too_large``; bytes that are not a PNG, JPEG, GIF or
    WebP image are 422 ``not_an_image``.
    """
    image = await load_image(_decoded(body.data), caller.server.image_policy)
    return ImageOut.of(await caller.agent.put_image(image))


@router.get(
    "/blobs/{sha256}",
    response_class=Response,
    responses={**problem_responses(404), 200: {"content": {"image/*": {}}, "description": "The image's bytes."}},
)
async def serve_image(
    sha256: Annotated[str, Path(pattern=SHA256_PATTERN)],
    caller: CallerDep,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """The bytes of an image of the caller's space (404 ``blob_not_found`` for any other hash)."""
    blob = await caller.agent.get_image(sha256)
    etag = f'"{sha256}"'
    if if_none_match == etag:
        return Response(status_code=304, headers={**_SERVED_HEADERS, "ETag": etag})
    try:
        media_type, disposition = sniff_image(blob.data)[0], "inline"
    except UsageError:  # an import may carry any bytes: never serve them as something a browser runs
        media_type, disposition = "application/octet-stream", "attachment"
    headers = {**_SERVED_HEADERS, "ETag": etag, "Content-Disposition": disposition}
    return Response(blob.data, media_type=media_type, headers=headers)


async def turn_images(caller: Caller, images: Sequence[ImageIn]) -> tuple[ImageRef, ...]:
    """The checked images of a turn request, their bytes attached (uploads read from the caller's space).

    Raises:
        UsageError: an image is refused (``not_an_image``, ``image_too_large``).
        NotFoundError: a ``sha256`` this space holds no image for (``blob_not_found``).
    """
    refs = []
    for item in images:
        data = _decoded(item.data) if item.data is not None else (await caller.agent.get_image(str(item.sha256))).data
        refs.append(await load_image(data, caller.server.image_policy))
    return tuple(refs)


def _decoded(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UsageError("the image data is not base64; encode the file's bytes", code="not_an_image") from exc
