"""``/image PATH`` in ``stellate chat``: the file is checked at once and goes with the next message, by reference."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cli_support import Run, events_of

from stellate.testing.images import png


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["A red square.", "Plain."]))
    monkeypatch.setenv("STELLATE_PROVIDER", "scripted")
    monkeypatch.setenv("STELLATE_SCRIPT", str(script))
    return script


def test_an_attached_image_goes_with_the_next_message_only(cli: Run, scripted: Path, db: Path, tmp_path: Path) -> None:
    """``/image`` attaches; the next message refers to the image by hash; the one after has none."""
    (tmp_path / "red.png").write_bytes(png(4, 3))
    result = cli("chat", stdin=f"/image {tmp_path / 'red.png'}\nwhat is it?\nand now?\n")
    assert result.status == 0, result.err
    assert "attached red.png (image/png, 4x3" in result.out
    session = result.out.split()[1]
    users = [data for _, kind, data in events_of(db, session) if kind == "user/message"]
    assert users[0]["images"] == [
        {
            "sha256": hashlib.sha256(png(4, 3)).hexdigest(),
            "media_type": "image/png",
            "bytes": len(png(4, 3)),
            "width": 4,
            "height": 3,
        }
    ]
    assert "images" not in users[1]


def test_a_file_that_is_no_image_is_refused_and_nothing_is_attached(
    cli: Run, scripted: Path, db: Path, tmp_path: Path
) -> None:
    """A text file is ``not_an_image``: the chat says so, goes on, and the next message carries no image."""
    (tmp_path / "notes.txt").write_text("hello")
    result = cli("chat", stdin=f"/image {tmp_path / 'notes.txt'}\nhi\n")
    assert "not_an_image" in result.err
    session = result.out.split()[1]
    assert [d for _, kind, d in events_of(db, session) if kind == "user/message"] == [{"content": "hi"}]
