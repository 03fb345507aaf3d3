"""`Client` with images: read on the client's side (a path here), uploaded, sent by hash, served back."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from stellate import Agent
from stellate.client import Client
from stellate.errors import NotFoundError, UsageError
from stellate.llm.scripted import ScriptedLLM
from stellate.log.messages import UserMessage
from stellate.server import create_app
from stellate.store.sqlite import SqliteStore
from stellate.testing.images import png


def sizes(request: object) -> str:
    last = request.messages[-1]  # type: ignore[attr-defined]
    assert isinstance(last, UserMessage)
    return ",".join(f"{i.width}x{i.height}" for i in last.images)


async def test_a_remote_turn_sends_a_local_file_and_the_server_keeps_it(tmp_path: Path) -> None:
    """The client reads the file, the server stores it once and the model sees it; the bytes come back by hash."""
    (tmp_path / "cat.png").write_bytes(png(6, 5))
    store = await SqliteStore.open(f"sqlite:///{tmp_path / 's.db'}")
    app = create_app(Agent(store, llm=ScriptedLLM(default=sizes)))
    try:
        async with Client("http://127.0.0.1", transport=httpx.ASGITransport(app)) as remote:
            root = await remote.create_session(label="look")
            result = await remote.turn(root.id, "what is it?", images=[tmp_path / "cat.png"])
            assert result.content == "6x5"
            messages = await remote.list_messages(root.id)
            image = messages[0].images[0]  # type: ignore[union-attr]
            assert await remote.get_image(image.sha256) == png(6, 5)
            with pytest.raises(NotFoundError) as caught:
                await remote.get_image("0" * 64)
            assert caught.value.code == "blob_not_found"
            with pytest.raises(UsageError) as refused:
                await remote.turn(root.id, "and this?", images=[b"plain text"])
            assert refused.value.code == "not_an_image"
    finally:
        await store.close()
