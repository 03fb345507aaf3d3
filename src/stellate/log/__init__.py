"""The session event log: envelope, vocabulary, invariants, transcript, repair and fork rules.

Pure functions and data; no I/O. Everything above builds on these rules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stellate.log.cursor import Cursor
    from stellate.log.events import (
        EVENT_TYPES,
        SURFACE_TYPES,
        TURN_MARKERS,
        Event,
        JsonObject,
        NewEvent,
        TurnEndReason,
        find_unstorable,
        make_event,
        now_ms,
        storable_text,
        validate_event,
    )
    from stellate.log.fork import check_explicit_boundary, clip_to_completed_turn, resolve_anchor
    from stellate.log.invariants import advance, check_log, check_messages_pairing
    from stellate.log.messages import (
        AssistantMessage,
        Message,
        SystemMessage,
        ToolCall,
        ToolMessage,
        UserMessage,
        message_from_json,
        message_to_json,
    )
    from stellate.log.repair import repair_events
    from stellate.log.state import SessionStatus, Slots, fold_slots
    from stellate.log.transcript import (
        INTERRUPTED_REPLY_NOTE,
        Transcript,
        TranscriptFold,
        derive_transcript,
        event_messages,
        sanitize_messages,
    )

# Each name is imported from its module on first use (PEP 562): code that needs one dataclass of the log does not
# load all of it (``stellate sessions list`` reads records, never a transcript; issue 22).
_LAZY = {
    "EVENT_TYPES": "stellate.log.events",
    "SURFACE_TYPES": "stellate.log.events",
    "TURN_MARKERS": "stellate.log.events",
    "Event": "stellate.log.events",
    "JsonObject": "stellate.log.events",
    "NewEvent": "stellate.log.events",
    "TurnEndReason": "stellate.log.events",
    "find_unstorable": "stellate.log.events",
    "make_event": "stellate.log.events",
    "now_ms": "stellate.log.events",
    "storable_text": "stellate.log.events",
    "validate_event": "stellate.log.events",
    "check_explicit_boundary": "stellate.log.fork",
    "clip_to_completed_turn": "stellate.log.fork",
    "resolve_anchor": "stellate.log.fork",
    "Cursor": "stellate.log.cursor",
    "advance": "stellate.log.invariants",
    "check_log": "stellate.log.invariants",
    "check_messages_pairing": "stellate.log.invariants",
    "AssistantMessage": "stellate.log.messages",
    "Message": "stellate.log.messages",
    "SystemMessage": "stellate.log.messages",
    "ToolCall": "stellate.log.messages",
    "ToolMessage": "stellate.log.messages",
    "UserMessage": "stellate.log.messages",
    "message_from_json": "stellate.log.messages",
    "message_to_json": "stellate.log.messages",
    "repair_events": "stellate.log.repair",
    "SessionStatus": "stellate.log.state",
    "Slots": "stellate.log.state",
    "fold_slots": "stellate.log.state",
    "INTERRUPTED_REPLY_NOTE": "stellate.log.transcript",
    "Transcript": "stellate.log.transcript",
    "TranscriptFold": "stellate.log.transcript",
    "derive_transcript": "stellate.log.transcript",
    "event_messages": "stellate.log.transcript",
    "sanitize_messages": "stellate.log.transcript",
}

__all__ = [
    "EVENT_TYPES",
    "INTERRUPTED_REPLY_NOTE",
    "SURFACE_TYPES",
    "TURN_MARKERS",
    "AssistantMessage",
    "Cursor",
    "Event",
    "JsonObject",
    "Message",
    "NewEvent",
    "SessionStatus",
    "Slots",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Transcript",
    "TranscriptFold",
    "TurnEndReason",
    "UserMessage",
    "advance",
    "check_explicit_boundary",
    "check_log",
    "check_messages_pairing",
    "clip_to_completed_turn",
    "derive_transcript",
    "event_messages",
    "find_unstorable",
    "fold_slots",
    "make_event",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "repair_events",
    "resolve_anchor",
    "sanitize_messages",
    "storable_text",
    "validate_event",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
