"""The session event log: envelope, vocabulary, invariants, transcript, repair and fork rules.

Pure functions and data; no I/O. Everything above builds on these rules.
"""

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
from stellate.log.invariants import Cursor, advance, check_log, check_messages_pairing
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
