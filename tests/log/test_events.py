from __future__ import annotations

import json

import pytest

from stellate.errors import FormatError
from stellate.log import NewEvent, find_unstorable, storable_text, validate_event


def test_known_event_returns_compact_json() -> None:
    assert validate_event(NewEvent(type="user/message", data={"content": "é"})) == '{"content":"é"}'


@pytest.mark.parametrize(
    "data",
    [
        {"content": "x", "z": -0.0},
        {"content": "x", 1: "int key"},
        {"content": "x", "s": {1, 2}},
        [1],
        {"content": "a\x00b"},
        {"content": "\ud800"},
        {"content": "x", "deep": [{"k\x00": 1}]},
        {"content": "x", "deep": [{"k\udfff": 1}]},
        {"content": "x", "t": (1, 2)},
        {"content": "x", "n": float("nan")},
        {"content": "x", "b": True, "e": [{"f": float("-inf")}]},
    ],
    ids=[
        "negative-zero",
        "int-key",
        "set",
        "not-object",
        "nul",
        "lone-surrogate",
        "nul-in-key",
        "surrogate-in-key",
        "tuple",
        "nan",
        "deep-infinity",
    ],
)
def test_data_that_does_not_survive_json_is_refused(data: object) -> None:
    with pytest.raises(FormatError):
        validate_event(NewEvent(type="user/message", data=data))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content", ["a literal \\u0000 is text", "\\\\u0000", "emoji 🙂 and 中文", 'quote " and \\ slash', ""]
)
def test_text_that_only_looks_suspicious_is_stored_as_is(content: str) -> None:
    text = validate_event(NewEvent(type="user/message", data={"content": content, "n": [1, 2.5, None, True]}))
    assert json.loads(text) == {"content": content, "n": [1, 2.5, None, True]}


def test_unknown_type_needs_ignorable() -> None:
    with pytest.raises(FormatError) as info:
        validate_event(NewEvent(type="my/event", data={}))
    assert info.value.code == "unknown_event_type"
    validate_event(NewEvent(type="my/event", data={}, ignorable=True))


def test_turn_end_reason_is_a_closed_vocabulary() -> None:
    with pytest.raises(FormatError, match="reason"):
        validate_event(NewEvent(type="turn/end", data={"turn": 1, "reason": "done"}))


@pytest.mark.parametrize(
    ("text", "fixed", "count"),
    [
        ("plain é 中文 😀", "plain é 中文 😀", 0),
        ("a\x00b", "a\ufffdb", 1),
        ("lone \ud800 and \udfff", "lone \ufffd and \ufffd", 2),
        ("\ud83d\ude00", "\ufffd\ufffd", 2),  # a pair left as two code points is not text a store keeps
    ],
)
def test_storable_text_replaces_what_a_store_refuses(text: str, fixed: str, count: int) -> None:
    assert storable_text(text) == (fixed, count)
    assert find_unstorable({"content": fixed}) is None
    validate_event(NewEvent(type="user/message", data={"content": fixed}))


def test_find_unstorable_names_the_problem_anywhere_in_the_data() -> None:
    assert find_unstorable({"a": [{"b": "x\x00"}]}) == "a NUL character, which PostgreSQL cannot store"
    assert "surrogate" in str(find_unstorable({"k\ud800": 1}))
    assert find_unstorable({"content": "fine", "n": 1.5}) is None
