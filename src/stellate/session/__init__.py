"""The Session primitive: one conversation on one log, one model call per `Session.send`."""

from stellate.session.context import build_context, identity_text
from stellate.session.output import OutputContract, OutputMode
from stellate.session.prompts import default_compress_fn, default_consolidate_fn
from stellate.session.session import Session
from stellate.session.turn import Turn
from stellate.session.types import (
    CompressFn,
    ConsolidateFn,
    ContextFn,
    ForkContext,
    SendDone,
    SendResult,
    SessionRuntime,
    SessionStreamEvent,
)

__all__ = [
    "CompressFn",
    "ConsolidateFn",
    "ContextFn",
    "ForkContext",
    "OutputContract",
    "OutputMode",
    "SendDone",
    "SendResult",
    "Session",
    "SessionRuntime",
    "SessionStreamEvent",
    "Turn",
    "build_context",
    "default_compress_fn",
    "default_consolidate_fn",
    "identity_text",
]
