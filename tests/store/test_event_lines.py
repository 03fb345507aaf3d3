"""The export's lines: spliced from SQLite's stored JSON text, byte for byte what `Event.to_json` encodes.

And the import's one check per line (`validate_decoded`) refuses exactly what `validate_event` refuses.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from stellate.errors import FormatError
from stellate.log import make_event
from stellate.log.events import Event, NewEvent, validate_decoded, validate_event
from stellate.store import Boundary, ForkRequest, SessionId, export_session, import_session
from stellate.store.event_lines import event_lines, image_data
from stellate.store.memory import MemoryStore
from stellate.store.sqlite import SqliteStore
from stellate.testing.contract_support import turn, with_turns

S = SessionId


def _encoded(events: list[Event]) -> list[str]:
    return [json.dumps(e.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n" for e in events]


async def _fork_with_extras(store: Any) -> SessionId:
    await with_turns(store, "src", 2)
    await store.create_session(
        session_id=S("kid"), parent_id=S("src"), fork=ForkRequest(source_id=S("src"), point=Boundary(seq=6))
    )
    extras = [NewEvent(type="app/x", data={"f": 1.5, "t": 'ü "q" \\ 漢'}, ignorable=True)]
    await store.append(S("kid"), [*turn(2, user="ü\n\t"), *extras])
    return S("kid")


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
async def test_lines_are_the_events_encoded_as_to_json_says(tmp_path: Path, backend: str) -> None:
    store = await SqliteStore.open(str(tmp_path / "s.db")) if backend == "sqlite" else MemoryStore()
    try:
        sid = await _fork_with_extras(store)
        events = await store.read_events(sid)
        assert await event_lines(store, sid, 0, len(events)) == _encoded(events)
        assert await event_lines(store, sid, 3, 9) == _encoded(events[3:9])  # across the fork's boundary
        assert [json.loads(line) for line in await event_lines(store, sid, 0, 100)] == [e.to_json() for e in events]
    finally:
        await store.close()


async def test_only_texts_naming_a_blob_are_returned_for_the_image_scan(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "s.db"))
    try:
        await with_turns(store, "src", 2)
        found = await image_data(store, S("src"), 100, ("user/message", "tool/result"))
        assert found == []
    finally:
        await store.close()


_BAD_DATA = [
    {"content": float("nan")},
    {"content": "x", "n": float("inf")},
    {"content": "x", "n": -0.0},
    {"content": "a\x00b"},
    {"content": "\ud800"},
    {"content": 3},  # the schema wants a string
    {},  # a required field missing
]


@pytest.mark.parametrize("data", _BAD_DATA, ids=["nan", "inf", "minus-zero", "nul", "surrogate", "type", "missing"])
def test_the_decoded_check_refuses_what_the_full_check_refuses(data: dict[str, Any]) -> None:
    event = Event(seq=1, type="user/message", time=1, data=data)
    with pytest.raises(FormatError) as full:
        validate_event(event)
    with pytest.raises(FormatError) as decoded:
        validate_decoded(event)
    assert decoded.value.message == full.value.message


def test_the_decoded_check_returns_the_full_checks_text() -> None:
    for data in ({"content": "-0.0 NaN Infinity \\u0000 in a text"}, {"content": "ü", "images": []}):
        event = Event(seq=1, type="user/message", time=1, data=data)
        assert validate_decoded(event) == validate_event(event)
    unknown = Event(seq=1, type="app/x", time=1, data={"a": [1, 2.5]}, ignorable=True)
    assert validate_decoded(unknown) == validate_event(unknown)


@pytest.mark.parametrize("raw", ['{"content": NaN}', '{"content": "x", "n": -0.0}', '{"content": "\\u0000"}'])
async def test_an_import_names_the_line_of_data_a_store_cannot_keep(raw: str) -> None:
    store = MemoryStore()
    await store.create_session(session_id=S("src"), events=[make_event("session/created", {"label": "s"})])
    await store.append(S("src"), turn(1))
    out = io.StringIO()
    await export_session(store, S("src"), out)
    lines = out.getvalue().splitlines(keepends=True)
    head, _, _ = lines[3].partition('"data":')
    lines[3] = f'{head}"data":{raw}}}\n'  # seq 2: the user's message
    with pytest.raises(FormatError) as caught:
        await import_session(store, io.StringIO("".join(lines)), session_id=S("copy"))
    assert caught.value.details["line"] == 4, caught.value
    assert [r.id for r in await store.list_sessions()] == ["src"]
