"""JSONL import refuses files that are not UTF-8 with a typed error naming the line, and writes nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from stellate.errors import FormatError
from stellate.log import make_event
from stellate.store import SessionId, export_session, import_session
from stellate.store.memory import MemoryStore


async def _exported(tmp_path: Path) -> bytes:
    store = MemoryStore()
    sid = SessionId("src")
    await store.create_session(session_id=sid, events=[make_event("session/created", {"label": "Plan"})])
    await store.append(sid, [make_event("memory/put", {"content": "café"}), make_event("label/set", {"label": "x"})])
    target = tmp_path / "src.jsonl"
    await export_session(store, sid, target)
    return target.read_bytes()


async def test_a_file_that_is_not_utf8_is_bad_format_naming_the_line(tmp_path: Path) -> None:
    lines = (await _exported(tmp_path)).splitlines(keepends=True)
    lines[2] = lines[2].replace("café".encode(), "café".encode("latin-1"))  # a Latin-1 editor saved it
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    store = MemoryStore()
    with pytest.raises(FormatError) as caught:
        await import_session(store, bad, session_id=SessionId("copy"))
    assert caught.value.code == "bad_format"
    assert caught.value.details["line"] == 3 and "line 3" in caught.value.message
    assert "UTF-8" in caught.value.message and "0xe9" in caught.value.message
    assert await store.list_sessions() == []


async def test_a_text_stream_that_fails_to_decode_is_bad_format(tmp_path: Path) -> None:
    raw = (await _exported(tmp_path)).replace("café".encode(), b"caf\xff")
    stream = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
    store = MemoryStore()
    with pytest.raises(FormatError) as caught:
        await import_session(store, stream, session_id=SessionId("copy"))
    assert caught.value.code == "bad_format" and "UTF-8" in caught.value.message
    assert await store.list_sessions() == []
