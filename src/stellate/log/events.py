"""The event envelope and the vocabulary of the session log (DESIGN.md §2).

An `Event` is what the store keeps: ``{seq, type, time, data}``. A `NewEvent` is what a writer hands to
the store; the store gives it its seq. ``data`` is plain JSON; `validate_event` checks it against the
schema of its type once, at the boundary (append and import), so readers can trust stored events.
"""

from __future__ import annotations

import json
import math
import re
import time as _time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from stellate.errors import FormatError

__all__ = [
    "EVENT_TYPES",
    "FREE_STANDING_TYPES",
    "SURFACE_TYPES",
    "TURN_MARKERS",
    "Event",
    "JsonObject",
    "NewEvent",
    "TurnEndReason",
    "make_event",
    "find_unstorable",
    "now_ms",
    "storable_text",
    "stored_event",
    "validate_decoded",
    "validate_event",
]

JsonObject: TypeAlias = dict[str, Any]

TurnEndReason: TypeAlias = Literal["completed", "aborted", "error", "max_rounds", "interrupted"]


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds, the unit of `Event.time`."""
    return _time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class NewEvent:
    """An event not yet in a log: the store assigns its seq."""

    type: str
    data: JsonObject = field(default_factory=dict)
    time: int = field(default_factory=now_ms)
    ignorable: bool = False
    """Readers that do not know ``type`` may skip the event instead of refusing the log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """An event in a session log."""

    seq: int
    """Position in the session's log, contiguous from 0 (inherited fork prefixes included)."""
    type: str
    time: int
    """Epoch milliseconds."""
    data: JsonObject
    ignorable: bool = False

    def to_json(self) -> JsonObject:
        """The envelope as plain JSON (the JSONL export line)."""
        out: JsonObject = {"seq": self.seq, "type": self.type, "time": self.time, "data": self.data}
        if self.ignorable:
            out["ignorable"] = True
        return out


_new = object.__new__
# The slot descriptors' setters (``Event.seq`` and so on at class level), looked up by name for mypy's sake.
_set_seq, _set_type, _set_time, _set_data, _set_ignorable = (
    vars(Event)[name].__set__ for name in ("seq", "type", "time", "data", "ignorable")
)


def stored_event(seq: int, event_type: str, time: int, data: JsonObject, ignorable: bool) -> Event:
    """An `Event` rebuilt from a store's row, without the dataclass ``__init__``.

    A cold open rebuilds every event of a log, and a frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field) cost as much as decoding the event's JSON; setting the slots directly
    costs a fifth of it. Only for values a store already validated.
    """
    event = _new(Event)
    _set_seq(event, seq)
    _set_type(event, event_type)
    _set_time(event, time)
    _set_data(event, data)
    _set_ignorable(event, ignorable)
    return event


def make_event(event_type: str, data: JsonObject | None = None, *, ignorable: bool = False) -> NewEvent:
    """Shorthand for `NewEvent` stamped with the current time."""
    return NewEvent(type=event_type, data={} if data is None else data, ignorable=ignorable)


# The schemas of ``data``, checked by hand: pydantic models built at import cost every process (a CLI command
# too) tens of milliseconds, the checks below a few microseconds per event (issue 22). Like the strict models they
# replace: a field holds exactly its JSON type (an int is not a bool), extra keys are allowed.
_Problem: TypeAlias = tuple[str, str]
"""Where in a value (``""``: the value itself; ``"0.id"``: inside it) and what is wrong there."""
_Check: TypeAlias = Callable[[Any], _Problem | None]
_Schema: TypeAlias = Mapping[str, tuple[_Check, bool]]
"""Field -> (its check, whether it is required)."""


def _of_type(kind: type, name: str) -> _Check:
    def check(value: Any) -> _Problem | None:
        return None if type(value) is kind else ("", f"Input should be a valid {name}")

    return check


def _nullable(kind: type, name: str) -> _Check:
    def check(value: Any) -> _Problem | None:
        return None if value is None or type(value) is kind else ("", f"Input should be a valid {name} or null")

    return check


def _one_of(*choices: str) -> _Check:
    expected = " or ".join(repr(c) for c in choices)

    def check(value: Any) -> _Problem | None:
        return None if type(value) is str and value in choices else ("", f"Input should be {expected}")

    return check


def _list_of(item: _Check) -> _Check:
    def check(value: Any) -> _Problem | None:
        if type(value) is not list:
            return "", "Input should be a valid list"
        for index, entry in enumerate(value):
            if (problem := item(entry)) is not None:
                return _within(str(index), problem)
        return None

    return check


def _object(schema: _Schema) -> _Check:
    def check(value: Any) -> _Problem | None:
        return ("", "Input should be a valid dictionary") if type(value) is not dict else _problem(schema, value)

    return check


def _anything(value: Any) -> _Problem | None:
    return None


def _within(name: str, problem: _Problem) -> _Problem:
    where, message = problem
    return (f"{name}.{where}" if where else name), message


def _problem(schema: _Schema, data: Mapping[str, Any]) -> _Problem | None:
    """The first field of ``data`` that does not fit ``schema``; or None."""
    for name, (check, required) in schema.items():
        if name not in data:
            if required:
                return name, "Field required"
        elif (problem := check(data[name])) is not None:
            return _within(name, problem)
    return None


_INT, _STR = (_of_type(int, "integer"), True), (_of_type(str, "string"), True)
_TURN: _Schema = {"turn": _INT}
_STEP: _Schema = {"turn": _INT, "step": _INT}
_CONTENT: _Schema = {"content": _STR}
_LABEL: _Schema = {"label": _STR}
_EMPTY: _Schema = {}
_TOOL_CALL: _Schema = {"id": _STR, "name": _STR, "arguments": _STR}
_IMAGE: _Schema = {
    "sha256": _STR,
    "media_type": _STR,
    "bytes": _INT,
    "width": (_of_type(int, "integer"), False),
    "height": (_of_type(int, "integer"), False),
}
_IMAGES = (_list_of(_object(_IMAGE)), False)
_REASONS = ("completed", "aborted", "error", "max_rounds", "interrupted")

#: Every event type stellate writes, with the schema its ``data`` must satisfy (field -> check, required).
EVENT_TYPES: Final[Mapping[str, _Schema]] = {
    "session/created": _LABEL,
    "turn/start": _TURN,
    "turn/end": {"turn": _INT, "reason": (_one_of(*_REASONS), True)},
    "step/start": _STEP,
    "step/end": _STEP,
    "user/message": {"content": _STR, "images": _IMAGES},
    "assistant/message": {"content": _STR, "tool_calls": (_list_of(_object(_TOOL_CALL)), False)},
    "tool/call": {"call_id": _STR, "name": _STR, "arguments": _STR},
    "tool/result": {
        "call_id": _STR,
        "name": _STR,
        "content": _STR,
        "is_error": (_of_type(bool, "boolean"), False),
        "images": _IMAGES,
    },
    "context/imported": {"messages": (_list_of(_of_type(dict, "dictionary")), True)},
    "system_prompt/set": _CONTENT,
    "memory/put": _CONTENT,
    "insight/put": _CONTENT,
    "insight/consumed": _EMPTY,
    "insight/cleared": _EMPTY,
    "label/set": _LABEL,
    "session/archived": _EMPTY,
    "config/frozen": {"config": (_of_type(dict, "dictionary"), True)},
    "compaction/summary": {"through_seq": _INT, "summary": _STR},
    "error/reported": {"code": _STR, "message": _STR},
    "session/forked": {"child_id": _STR, "turn": _INT},
    "output/validated": {
        "turn": _INT,
        "name": _STR,
        "mode": (_one_of("native", "tool"), True),
        "value": (_anything, True),
    },
    "model/called": {
        "turn": _INT,
        "step": _INT,
        "provider": _STR,
        "model": _STR,
        "input_tokens": (_nullable(int, "integer"), True),
        "output_tokens": (_nullable(int, "integer"), True),
        "latency_ms": _INT,
        "ttft_ms": (_nullable(int, "integer"), True),
        "stop_reason": (_nullable(str, "string"), True),
    },
    "tool/approval_requested": {
        "turn": _INT,
        "step": _INT,
        "call_id": _STR,
        "name": _STR,
        "arguments": _STR,
        "deadline": (_nullable(int, "integer"), True),
        "on_timeout": (_one_of("approve", "deny"), True),
    },
    "tool/approval_decided": {
        "call_id": _STR,
        "decision": (_one_of("approved", "denied"), True),
        "by": _STR,
        "arguments": (_nullable(str, "string"), False),
        "reason": (_nullable(str, "string"), False),
    },
}

#: Events that put something in front of the model.
SURFACE_TYPES: Final = frozenset({"user/message", "assistant/message", "tool/result", "context/imported"})
TURN_MARKERS: Final = ("turn/start", "turn/end")
#: Slot events that may stand anywhere in a log, inside another writer's turn too: a store accepts them from
#: any writer, where every other event needs the session's lease while someone holds it.
FREE_STANDING_TYPES: Final = frozenset(
    {"system_prompt/set", "memory/put", "insight/put", "insight/cleared", "label/set", "session/forked"}
)


def validate_event(event: NewEvent | Event) -> str:
    """Check one event's type and data, independent of its place in a log.

    Returns:
        The compact JSON text of ``data``, ready to store.

    Raises:
        FormatError: unknown type (code ``unknown_event_type``) unless ignorable, data that is not lossless
            JSON, or data that does not fit the type's schema.
    """
    text = _lossless_json(event.data, event.type)
    schema = EVENT_TYPES.get(event.type)
    if schema is None:
        if event.ignorable:
            return text
        raise FormatError(
            f"unknown event type {event.type!r}; mark it ignorable=True to store an application event",
            code="unknown_event_type",
            type=event.type,
        )
    problem = _problem(schema, event.data)
    if problem is not None:
        where, message = problem
        raise FormatError(f"bad data for {event.type!r}: {where}: {message}", type=event.type)
    return text


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""Encodes what ``json.dumps(data, ensure_ascii=False, separators=(",", ":"))`` does, without a new encoder per call."""


def validate_decoded(event: NewEvent | Event) -> str:
    """`validate_event` for data just decoded by `json.loads` (an import's lines): the same checks, errors and text.

    Decoded JSON holds only JSON types under string keys, so the walk over the value that `validate_event` makes
    is needed only where the encoded text shows what JSON decodes but a store cannot keep the same (NaN or an
    infinity, -0.0, a NUL, a lone surrogate); such a text, or data that fails its schema, takes `validate_event`.
    """
    data = event.data
    schema = EVENT_TYPES.get(event.type)
    if type(data) is not dict or schema is None:
        return validate_event(event)
    text = _COMPACT.encode(data)
    suspect = "NaN" in text or "Infinity" in text or "-0.0" in text or "\\u0000" in text
    if suspect or (not text.isascii() and _SURROGATES.search(text) is not None) or _problem(schema, data):
        return validate_event(event)
    return text


def _lossless_json(data: object, event_type: str) -> str:
    if not isinstance(data, dict):
        raise FormatError(f"data of {event_type!r} must be a JSON object", type=event_type)
    problem = _unstorable(data, texts=False)
    if problem is None:
        text = _COMPACT.encode(data)
        # One look at the encoded text instead of one per string: JSON escapes a NUL as \u0000 and leaves a
        # lone surrogate as it is. Only a hit (a text may just spell out "\u0000") walks the strings too.
        suspect = "\\u0000" in text or _SURROGATES.search(text) is not None
        if not suspect or (problem := _unstorable(data)) is None:
            return text
    raise FormatError(f"data of {event_type!r} is not lossless JSON: it holds {problem}", type=event_type)


_JSON_TYPES = (str, dict, list, float, int, bool, type(None))
# Characters no store keeps: NUL (PostgreSQL text refuses it) and surrogates, which in a Python str are
# always unpaired (a valid pair decodes to one code point) and so not valid UTF-8.
_UNSTORABLE_CHARS = re.compile("[\x00\ud800-\udfff]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def find_unstorable(value: object) -> str | None:
    """What in ``value`` a store would refuse (a NUL, a lone surrogate, a non-JSON value), or None.

    The check `validate_event` makes, for a writer that wants to know before it stages an event.
    """
    return _unstorable(value)


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with every NUL and lone surrogate replaced by U+FFFD, and how many were replaced."""
    if _bad_text(text) is None:
        return text, 0
    return _UNSTORABLE_CHARS.subn("\ufffd", text)


def _unstorable(value: object, *, texts: bool = True) -> str | None:
    """What in ``value`` would not come back identical from a store, or None.

    One walk instead of a dump-and-reload comparison: only plain JSON types pass (no tuples, sets or
    non-string keys), and neither -0.0, NaN, infinities nor (with ``texts``) NUL characters or lone surrogates.
    """
    if type(value) not in _JSON_TYPES:  # exact types: a str or int subclass (an enum) does not come back as it was
        return f"a {type(value).__name__}, which is not a JSON type"
    if isinstance(value, str):
        return _bad_text(value) if texts else None
    if isinstance(value, dict):
        return _unstorable_items(value, texts)
    if isinstance(value, list):
        return next((p for item in value if (p := _unstorable(item, texts=texts))), None)
    if isinstance(value, float):
        return _unstorable_float(value)
    return None


def _unstorable_items(value: dict[Any, Any], texts: bool) -> str | None:
    for key, item in value.items():
        if type(key) is not str:
            return f"a non-string key {key!r}"
        if (texts and (problem := _bad_text(key))) or (problem := _unstorable(item, texts=texts)):
            return problem
    return None


def _unstorable_float(value: float) -> str | None:
    if not math.isfinite(value):
        return f"{value!r}, which JSON cannot encode"
    if value == 0.0 and math.copysign(1.0, value) < 0:
        return "-0.0, which JSON cannot tell from 0"
    return None


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "a NUL character, which PostgreSQL cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate, which is not valid UTF-8"
    return None
