"""JSONL export and import of one session: a header line with its lineage, then one event per line.

The export holds the session's whole log (inherited prefix included), so the file stands alone. The blobs its
events refer to (images) follow the events, one line each (``{"stellate": "blob", "sha256", "media_type",
"data": base64}``), counted by the header's ``blobs``. Import checks every line before anything is written and
names the first bad one; it puts the blobs before it creates the session, so no event refers to a missing blob.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from stellate.errors import FormatError, InvariantError, NotFoundError, StoreError
from stellate.log.events import Event, stored_event, validate_decoded
from stellate.log.invariants import Cursor, advance
from stellate.store._batch import CheckedEvents
from stellate.store.base import BaseStore
from stellate.store.blobs import IMAGE_EVENT_TYPES, BlobStore, blob_hash, referenced_hashes
from stellate.store.event_lines import event_lines, image_data
from stellate.store.types import SessionId, SessionRecord

__all__ = ["FORMAT_VERSION", "ProgressFn", "export_session", "import_session"]

FORMAT_VERSION = 1
_CHUNK = 2000
_ENVELOPE_KEYS = frozenset({"seq", "type", "time", "data", "ignorable"})
_REQUIRED_KEYS = frozenset({"seq", "type", "time", "data"})

ProgressFn = Callable[[int, int], None]
"""Called with (events done, events in all) as an export or import goes."""


def _header(record: SessionRecord, blobs: int) -> dict[str, Any]:
    return {
        "stellate": "session",
        "format": FORMAT_VERSION,
        "id": record.id,
        "label": record.label,
        "parent_id": record.parent_id,
        "source_id": record.source_id,
        "fork_seq": record.fork_seq,
        "created_at": record.created_at,
        "events": record.next_seq,
        "blobs": blobs,
    }


async def export_session(
    store: BaseStore, session_id: SessionId, target: str | Path | IO[str], *, progress: ProgressFn | None = None
) -> int:
    """Write ``session_id``'s log as JSONL to a path or an open text file; returns the number of events.

    Raises:
        NotFoundError: unknown session.
    """
    record = await store.get_session(session_id)
    if isinstance(target, str | Path):
        with open(target, "w", encoding="utf-8") as fp:
            return await _export_to(store, record, fp, progress)
    return await _export_to(store, record, target, progress)


async def _export_to(store: BaseStore, record: SessionRecord, fp: IO[str], progress: ProgressFn | None) -> int:
    # Lines are made from the stored JSON text where the backend keeps it (`event_lines`): no decode, no encode.
    referring = await image_data(store, record.id, record.next_seq, IMAGE_EVENT_TYPES)
    hashes = sorted(referenced_hashes(referring))
    fp.write(json.dumps(_header(record, len(hashes)), ensure_ascii=False) + "\n")
    done = 0
    while done < record.next_seq:
        lines = await event_lines(store, record.id, done, min(done + _CHUNK, record.next_seq))
        if not lines:
            break
        fp.writelines(lines)
        done += len(lines)
        if progress is not None:
            progress(done, record.next_seq)
    for sha256 in hashes:
        blob = await _blob_store(store).get_blob(sha256)
        line = {"stellate": "blob", "sha256": sha256, "media_type": blob.media_type, "data": _b64(blob.data)}
        fp.write(json.dumps(line) + "\n")
    return done


def _blob_store(store: BaseStore) -> BlobStore:
    if not isinstance(store, BlobStore):
        raise StoreError(f"{type(store).__name__} keeps no blobs, so it cannot hold images", code="unsupported")
    return store


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def import_session(
    store: BaseStore,
    source: str | Path | IO[str],
    *,
    session_id: SessionId | None = None,
    progress: ProgressFn | None = None,
) -> SessionRecord:
    """Create a session from a JSONL export; it owns a copy of every event (no reference to its source).

    The lineage of the header is kept as provenance (``source_id``, ``fork_seq``); the topology parent is
    kept when it exists in ``store``, else the session becomes a root.

    Args:
        store: Where to create the session.
        source: Path or open text file of the export.
        session_id: Id for the new session (default: the header's).
        progress: Called with (events read, events in the header) as lines are checked.

    Raises:
        FormatError: a line is not UTF-8, not JSON, not an event, out of order, breaks an invariant, or the
            file is truncated; ``details["line"]`` is its 1-based number. Nothing is written.
        ConflictError: the id is taken (code ``session_exists``).
    """
    if isinstance(source, str | Path):
        # Read bytes and decode line by line: a text-mode file decodes in blocks, and its UnicodeDecodeError
        # would name neither the line nor be a stellate error.
        with open(source, "rb") as raw:
            header, events, blobs = _read_file(_decoded(raw), progress)
    else:
        header, events, blobs = _read_file(_guarded(source), progress)
    for media_type, data in blobs:
        await _blob_store(store).put_blob(data, media_type=media_type)
    parent = header.get("parent_id")
    if parent is not None and await _missing(store, SessionId(parent)):
        parent = None
    return await store.create_session(
        session_id=session_id or SessionId(header["id"]),
        parent_id=parent,
        events=events,
        source_id=header.get("source_id"),
        fork_seq=header.get("fork_seq"),
    )


async def _missing(store: BaseStore, session_id: SessionId) -> bool:
    try:
        await store.get_session(session_id)
    except NotFoundError:
        return True
    return False


def _decoded(raw: Iterable[bytes]) -> Iterator[str]:
    for number, line in enumerate(raw, start=1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as exc:
            byte = line[exc.start]
            raise _bad(number, f"not UTF-8 text: byte {byte:#04x} at column {exc.start + 1} ({exc.reason})") from exc


def _guarded(lines: Iterable[str]) -> Iterator[str]:
    """Lines of a text stream the caller opened; its decoding error becomes a `FormatError`."""
    number = 0
    iterator = iter(lines)
    while True:
        try:
            line = next(iterator)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            # The stream decodes ahead in blocks: the bad byte is on this line or a later one.
            raise _bad(number + 1, f"not UTF-8 text at or after this line ({exc.reason})") from exc
        number += 1
        yield line


def _read_file(
    lines: Iterable[str], progress: ProgressFn | None
) -> tuple[dict[str, Any], CheckedEvents, list[tuple[str, bytes]]]:
    numbered = enumerate(lines, start=1)
    header = _read_header(next(numbered, (1, "")))
    total = header["events"]
    cursor, events, texts = Cursor(), list[Event](), list[str]()
    blobs: list[tuple[str, bytes]] = []
    for number, line in numbered:
        if len(events) == total:  # past the events: the blobs they refer to
            blobs.append(_parse_blob(number, line))
            continue
        event, text = _parse_event(number, line)
        try:
            cursor = advance(cursor, event)
        except InvariantError as exc:
            raise _bad(number, exc.message) from exc
        events.append(event)
        texts.append(text)
        if progress is not None and number % _CHUNK == 0:
            progress(len(events), total)
    if len(events) != total:
        raise _bad(len(events) + 2, f"file is truncated: header promises {total} events, found {len(events)}")
    if len(blobs) != header.get("blobs", 0):
        raise _bad(total + len(blobs) + 2, f"file is truncated: header promises {header['blobs']} blobs")
    if progress is not None:
        progress(len(events), total)
    return header, CheckedEvents(events, texts, Cursor(), cursor), blobs


def _parse_blob(number: int, line: str) -> tuple[str, bytes]:
    raw = _json_line(number, line)
    if raw.get("stellate") != "blob" or not all(isinstance(raw.get(k), str) for k in ("sha256", "media_type", "data")):
        raise _bad(number, "not a blob line (stellate, sha256, media_type and base64 data)")
    try:
        data = base64.b64decode(raw["data"], validate=True)
    except binascii.Error as exc:
        raise _bad(number, "the blob's data is not base64") from exc
    if blob_hash(data) != raw["sha256"]:
        raise _bad(number, "the blob's data does not match its sha256")
    return raw["media_type"], data


def _read_header(numbered_line: tuple[int, str]) -> dict[str, Any]:
    number, line = numbered_line
    header = _json_line(number, line)
    if header.get("stellate") != "session" or not isinstance(header.get("id"), str):
        raise _bad(number, "not a stellate session export (the header line is missing)")
    if header.get("format") != FORMAT_VERSION:
        raise _bad(number, f"export format {header.get('format')!r} is not supported (expected {FORMAT_VERSION})")
    if not isinstance(header.get("events"), int):
        raise _bad(number, "header lacks the event count")
    return header


def _parse_event(number: int, line: str) -> tuple[Event, str]:
    """The event of a line, and the JSON text of its data (it is validated: `validate_decoded`)."""
    raw = _json_line(number, line)
    keys = raw.keys()
    if not _REQUIRED_KEYS <= keys or not keys <= _ENVELOPE_KEYS:
        raise _bad(number, f"not an event envelope: keys {sorted(raw)}")
    seq, kind, stamp = raw["seq"], raw["type"], raw["time"]
    if not isinstance(seq, int) or not isinstance(stamp, int) or not isinstance(kind, str):
        raise _bad(number, "seq and time must be integers and type a string")
    event = stored_event(seq, kind, stamp, raw["data"], bool(raw.get("ignorable")))
    try:
        text = validate_decoded(event)
    except FormatError as exc:
        raise _bad(number, exc.message) from exc
    return event, text


def _json_line(number: int, line: str) -> dict[str, Any]:
    if not line.endswith("\n"):
        raise _bad(number, "line is cut short (no newline): the file is truncated")
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _bad(number, f"not JSON: {exc.msg}") from exc
    if not isinstance(value, dict):
        raise _bad(number, "not a JSON object")
    return value


def _bad(number: int, why: str) -> FormatError:
    return FormatError(f"line {number}: {why}", line=number)
