"""Images over REST: upload (base64 JSON) and serving by sha256, turns carrying images, limits and isolation."""

from __future__ import annotations

import base64
import hashlib

import httpx
import pytest
from fastapi import FastAPI
from server_support import Keys, bearer, make_agent

from stellate.llm.scripted import ScriptedLLM
from stellate.llm.types import LLMRequest
from stellate.log.messages import UserMessage
from stellate.server import create_app
from stellate.store import BaseStore
from stellate.testing.images import png

RED = png(4, 3)
SHA = hashlib.sha256(RED).hexdigest()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def seen_images(request: LLMRequest) -> str:
    """A model that answers with what it was shown: the sizes of the last message's images."""
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    return " ".join(f"{i.media_type}:{len(i.data or b'')}" for i in last.images) or "no images"


async def new_session(client: httpx.AsyncClient, **headers: str) -> str:
    response = await client.post("/sessions", json={"label": "look"}, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def test_an_upload_answers_its_hash_and_the_image_is_served_back(client: httpx.AsyncClient) -> None:
    """``POST /blobs`` stores the image; ``GET /blobs/{sha256}`` serves its bytes as its own type, nosniff."""
    response = await client.post("/blobs", json={"data": b64(RED)})
    assert response.status_code == 201
    assert response.json() == {"sha256": SHA, "media_type": "image/png", "bytes": len(RED), "width": 4, "height": 3}
    served = await client.get(f"/blobs/{SHA}")
    assert served.status_code == 200 and served.content == RED
    assert served.headers["content-type"] == "image/png"
    assert served.headers["x-content-type-options"] == "nosniff"
    assert "immutable" in served.headers["cache-control"]
    again = await client.get(f"/blobs/{SHA}", headers={"If-None-Match": served.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


async def test_a_turn_takes_inline_and_uploaded_images(store: BaseStore) -> None:
    """A turn's ``images`` hold base64 ``data`` or an uploaded ``sha256``; the model gets both images' bytes."""
    app = create_app(make_agent(store, ScriptedLLM(default=seen_images)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as client:
        await client.post("/blobs", json={"data": b64(RED)})
        sid = await new_session(client)
        body = {"content": "look", "images": [{"sha256": SHA}, {"data": b64(png(1, 1))}]}
        response = await client.post(f"/sessions/{sid}/turns", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["content"] == f"image/png:{len(RED)} image/png:{len(png(1, 1))}"
        transcript = (await client.get(f"/sessions/{sid}/transcript")).json()
        assert [i["sha256"] for i in transcript[0]["images"]] == [SHA, hashlib.sha256(png(1, 1)).hexdigest()]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"data": b64(b"not an image at all")}, 422, "not_an_image"),
        ({"data": "%%% not base64"}, 422, "not_an_image"),
        ({"sha256": "0" * 64}, 404, "blob_not_found"),
    ],
)
async def test_bad_turn_images_are_refused_before_the_turn(
    client: httpx.AsyncClient, body: dict[str, str], status: int, code: str
) -> None:
    """A bad image refuses the request with its code, and the session gets no turn."""
    sid = await new_session(client)
    response = await client.post(f"/sessions/{sid}/turns", json={"content": "look", "images": [body]})
    assert (response.status_code, response.json()["code"]) == (status, code)
    events = (await client.get(f"/sessions/{sid}/events")).json()["events"]
    assert [e["type"] for e in events] == ["session/created"]


async def test_an_image_over_the_limit_is_413_image_too_large(store: BaseStore) -> None:
    """Past ``max_image_bytes``: 413 ``image_too_large``, for an upload (by its body size) and a turn's image."""
    app = create_app(make_agent(store, ScriptedLLM(default=seen_images)), max_image_bytes=len(RED) - 1)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as client:
        upload = await client.post("/blobs", json={"data": b64(RED)})
        assert (upload.status_code, upload.json()["code"]) == (413, "image_too_large")
        huge = await client.post("/blobs", json={"data": b64(RED * 100)})
        assert (huge.status_code, huge.json()["code"]) == (413, "image_too_large")
        sid = await new_session(client)
        turn = await client.post(f"/sessions/{sid}/turns", json={"content": "x", "images": [{"data": b64(RED)}]})
        assert (turn.status_code, turn.json()["code"]) == (413, "image_too_large")


async def test_images_need_a_key_and_stay_in_their_space(keyed: httpx.AsyncClient, keys: Keys) -> None:
    """Without a key nothing is served; another space's key gets 404 for the hash; a read-only key cannot upload."""
    uploaded = await keyed.post("/blobs", json={"data": b64(RED)}, headers=bearer(keys.alpha))
    assert uploaded.status_code == 201
    assert (await keyed.get(f"/blobs/{SHA}")).status_code == 401
    assert (await keyed.get(f"/blobs/{SHA}", headers=bearer(keys.alpha))).content == RED
    other = await keyed.get(f"/blobs/{SHA}", headers=bearer(keys.beta))
    assert (other.status_code, other.json()["code"]) == (404, "blob_not_found")
    read_only = await keyed.post("/blobs", json={"data": b64(RED)}, headers=bearer(keys.alpha_read_only))
    assert read_only.json()["code"] == "read_only_key"
    sid = await new_session(keyed, **bearer(keys.beta))
    stolen = await keyed.post(
        f"/sessions/{sid}/turns", json={"content": "x", "images": [{"sha256": SHA}]}, headers=bearer(keys.beta)
    )
    assert (stolen.status_code, stolen.json()["code"]) == (404, "blob_not_found")


async def test_bytes_that_are_not_an_image_are_never_served_as_one(app: FastAPI, store: BaseStore) -> None:
    """A blob an import brought in that is no image is served as an attachment of opaque bytes."""
    sha = await store.put_blob(b"<script>alert(1)</script>", media_type="text/html")  # type: ignore[attr-defined]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1/v1") as client:
        served = await client.get(f"/blobs/{sha}")
    assert served.headers["content-type"] == "application/octet-stream"
    assert served.headers["content-disposition"] == "attachment"
