"""Crash repair: close a turn that a dead process left open (DESIGN.md §2).

Repair never truncates. It appends, in order: a synthetic error result for every unanswered tool call
of the open step (``not started`` when no ``tool/call`` was recorded, ``outcome unknown`` when one was),
``step/end`` if a step is open, and ``turn/end {reason: interrupted}``. On a closed log it appends
nothing, so running it twice is the same as running it once. A paused turn (tool calls waiting for a
person's approval, `Cursor.paused`) is not dead: nobody holds its lease on purpose, and repair leaves it be.
"""

from __future__ import annotations

from stellate.log.events import NewEvent, TurnEndReason
from stellate.log.invariants import Cursor

__all__ = ["NOT_STARTED_TEXT", "OUTCOME_UNKNOWN_TEXT", "repair_events"]

NOT_STARTED_TEXT = (
    "Tool call {call_id} ({name}) was interrupted before it started. Call it again if it is still needed."
)
OUTCOME_UNKNOWN_TEXT = (
    "Tool call {call_id} ({name}) was interrupted while it ran; its outcome is unknown. "
    "Call it again only if it is read-only or idempotent; otherwise check its effect first."
)


def repair_events(
    cursor: Cursor, *, call_names: dict[str, str], time: int, reason: TurnEndReason = "interrupted"
) -> list[NewEvent]:
    """The events that close the log described by ``cursor``; empty when no turn is open or the turn is paused.

    Args:
        cursor: The cursor after the log's last event.
        call_names: Tool name of each requested call id of the open step (for the synthetic results).
        time: Timestamp for the synthetic events; use the last real event's time so repair is deterministic.
        reason: Reason recorded on ``turn/end``: ``interrupted`` after a crash, ``aborted`` for a cancelled turn.
    """
    if not cursor.turn_open or cursor.paused:
        return []
    closers: list[NewEvent] = []
    if cursor.step_open:
        for call_id in cursor.unanswered:
            name = call_names.get(call_id, "unknown")
            template = OUTCOME_UNKNOWN_TEXT if call_id in cursor.started else NOT_STARTED_TEXT
            data = {
                "call_id": call_id,
                "name": name,
                "content": template.format(call_id=call_id, name=name),
                "is_error": True,
                "interrupted": "outcome_unknown" if call_id in cursor.started else "not_started",
            }
            closers.append(NewEvent(type="tool/result", data=data, time=time))
        closers.append(NewEvent(type="step/end", data={"turn": cursor.last_turn, "step": cursor.step}, time=time))
    turn_end = {"turn": cursor.last_turn, "reason": reason}
    closers.append(NewEvent(type="turn/end", data=turn_end, time=time))
    return closers
