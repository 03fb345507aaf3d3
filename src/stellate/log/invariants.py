"""The log's invariants, checked on every append and on load (DESIGN.md §2).

A `Cursor` is the little state needed to judge the next event: where the log ends, which turn and step
are open, and which tool calls of the open step are still unanswered. It is folded event by event and
is small enough for a store to keep beside the session, so checking an append never rereads the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stellate.errors import InvariantError
from stellate.log._copy import replacer
from stellate.log.cursor import Cursor
from stellate.log.events import Event
from stellate.log.messages import message_from_json

__all__ = ["Cursor", "advance", "check_log", "check_messages_pairing"]


replace = replacer(Cursor)


def _refuse(event: Event, why: str) -> InvariantError:
    return InvariantError(f"event {event.seq} ({event.type}) refused: {why}", seq=event.seq, type=event.type)


def advance(cursor: Cursor, event: Event) -> Cursor:
    """Check ``event`` against the log so far and return the cursor after it.

    Raises:
        InvariantError: the event would break an invariant; ``details`` name its seq and type.
    """
    if event.seq != cursor.next_seq:
        raise _refuse(event, f"expected seq {cursor.next_seq}")
    rule = _RULES.get(event.type)
    return rule(cursor, event) if rule is not None else replace(cursor, next_seq=event.seq + 1)


def check_log(events: Iterable[Event], cursor: Cursor | None = None) -> Cursor:
    """Check a whole log (or a continuation of ``cursor``) and return the final cursor.

    Raises:
        InvariantError: at the first event that breaks a rule.
    """
    current = cursor if cursor is not None else Cursor()
    for event in events:
        current = advance(current, event)
    return current


def _turn_start(cursor: Cursor, event: Event) -> Cursor:
    if cursor.turn_open:
        raise _refuse(event, f"turn {cursor.last_turn} is still open; turns never nest")
    if event.data["turn"] != cursor.last_turn + 1:
        raise _refuse(event, f"next turn must be numbered {cursor.last_turn + 1}")
    return replace(cursor, next_seq=event.seq + 1, last_turn=cursor.last_turn + 1, turn_open=True, step=0)


def _turn_end(cursor: Cursor, event: Event) -> Cursor:
    if not cursor.turn_open or event.data["turn"] != cursor.last_turn:
        raise _refuse(event, f"turn {event.data['turn']} is not the open turn")
    if cursor.step_open:
        raise _refuse(event, f"step {cursor.step} is still open")
    return replace(cursor, next_seq=event.seq + 1, turn_open=False, step=0, last_end_seq=event.seq)


def _step_start(cursor: Cursor, event: Event) -> Cursor:
    if not cursor.turn_open or event.data["turn"] != cursor.last_turn:
        raise _refuse(event, "a step must belong to the open turn")
    if cursor.step_open:
        raise _refuse(event, f"step {cursor.step} is still open")
    if event.data["step"] != cursor.step + 1:
        raise _refuse(event, f"next step must be numbered {cursor.step + 1}")
    return replace(
        cursor,
        next_seq=event.seq + 1,
        step=cursor.step + 1,
        step_open=True,
        step_replied=False,
        requested=(),
        started=(),
        answered=(),
    )


def _step_end(cursor: Cursor, event: Event) -> Cursor:
    if not cursor.step_open or (event.data["turn"], event.data["step"]) != (cursor.last_turn, cursor.step):
        raise _refuse(event, "not the open step")
    if cursor.unanswered:
        raise _refuse(event, f"tool calls without a result: {', '.join(cursor.unanswered)}")
    return replace(
        cursor, next_seq=event.seq + 1, step_open=False, step_replied=False, requested=(), started=(), answered=()
    )


def _assistant_message(cursor: Cursor, event: Event) -> Cursor:
    calls = tuple(c["id"] for c in event.data.get("tool_calls", ()))
    if not cursor.turn_open:
        if calls:
            raise _refuse(event, "tool calls are only allowed inside a step")
        return replace(cursor, next_seq=event.seq + 1)
    if not cursor.step_open:
        raise _refuse(event, "inside a turn, an assistant message belongs to a step")
    if cursor.step_replied:
        raise _refuse(event, "a step holds one assistant message (one model call)")
    if len(set(calls)) != len(calls):
        raise _refuse(event, "duplicate tool call ids")
    return replace(cursor, next_seq=event.seq + 1, step_replied=True, requested=calls)


def _tool_call(cursor: Cursor, event: Event) -> Cursor:
    call_id = event.data["call_id"]
    _require_requested(cursor, event, call_id)
    _require_not_awaiting(cursor, event, call_id)
    if call_id in cursor.started:
        raise _refuse(event, f"tool call {call_id} was already started")
    return replace(cursor, next_seq=event.seq + 1, started=(*cursor.started, call_id))


def _tool_result(cursor: Cursor, event: Event) -> Cursor:
    call_id = event.data["call_id"]
    _require_requested(cursor, event, call_id)
    _require_not_awaiting(cursor, event, call_id)
    return replace(cursor, next_seq=event.seq + 1, answered=(*cursor.answered, call_id))


def _require_requested(cursor: Cursor, event: Event, call_id: str) -> None:
    if not cursor.step_open:
        raise _refuse(event, "tool events belong to an open step")
    if call_id not in cursor.requested:
        raise _refuse(event, f"no tool call {call_id!r} was requested in this step")
    if call_id in cursor.answered:
        raise _refuse(event, f"tool call {call_id} already has its result")


def _require_not_awaiting(cursor: Cursor, event: Event, call_id: str) -> None:
    if call_id in cursor.awaiting:
        raise _refuse(event, f"tool call {call_id} waits for approval; record the decision first")


def _approval_requested(cursor: Cursor, event: Event) -> Cursor:
    call_id = event.data["call_id"]
    _require_requested(cursor, event, call_id)
    _require_not_awaiting(cursor, event, call_id)
    if call_id in cursor.started:
        raise _refuse(event, f"tool call {call_id} already started")
    if (event.data["turn"], event.data["step"]) != (cursor.last_turn, cursor.step):
        raise _refuse(event, "an approval request belongs to the open step")
    return replace(cursor, next_seq=event.seq + 1, awaiting=(*cursor.awaiting, call_id))


def _approval_decided(cursor: Cursor, event: Event) -> Cursor:
    call_id = event.data["call_id"]
    if call_id not in cursor.awaiting:
        raise _refuse(event, f"tool call {call_id} does not wait for approval")
    return replace(cursor, next_seq=event.seq + 1, awaiting=tuple(c for c in cursor.awaiting if c != call_id))


def _user_message(cursor: Cursor, event: Event) -> Cursor:
    if cursor.step_open:
        raise _refuse(event, "a user message cannot interrupt a step")
    return replace(cursor, next_seq=event.seq + 1)


def _context_imported(cursor: Cursor, event: Event) -> Cursor:
    if cursor.turn_open:
        raise _refuse(event, "imported context is only allowed between turns")
    try:
        check_messages_pairing(event.data["messages"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _refuse(event, f"imported messages are not a valid transcript: {exc}") from exc
    return replace(cursor, next_seq=event.seq + 1)


def _compaction(cursor: Cursor, event: Event) -> Cursor:
    if cursor.step_open:
        raise _refuse(event, "compaction cannot happen inside a step")
    if not 0 <= event.data["through_seq"] < event.seq:
        raise _refuse(event, "through_seq must name an earlier event")
    return replace(cursor, next_seq=event.seq + 1)


def _output(cursor: Cursor, event: Event) -> Cursor:
    if not cursor.turn_open or event.data["turn"] != cursor.last_turn:
        raise _refuse(event, "structured output belongs to the open turn")
    if cursor.step_open:
        raise _refuse(event, "structured output is recorded after the step that produced it")
    return replace(cursor, next_seq=event.seq + 1)


def _model_called(cursor: Cursor, event: Event) -> Cursor:
    # Written with the step's events, so it names a step of the open turn that has started (open or closed).
    if not cursor.turn_open or event.data["turn"] != cursor.last_turn:
        raise _refuse(event, "a model call is recorded inside its turn")
    if not 1 <= event.data["step"] <= cursor.step:
        raise _refuse(event, f"a model call is recorded after its step/start (steps so far: {cursor.step})")
    return replace(cursor, next_seq=event.seq + 1)


def check_messages_pairing(messages: list[Any]) -> None:
    """Check that JSON messages form a valid transcript: every tool call answered right after it.

    Raises:
        ValueError: a message is malformed, a call lacks its result, or a result lacks its call.
    """
    pending: list[str] = []
    for raw in messages:
        message = message_from_json(raw)
        if message.role == "tool":
            if message.call_id not in pending:
                raise ValueError(f"tool result {message.call_id!r} answers no open call")
            pending.remove(message.call_id)
            continue
        if pending:
            raise ValueError(f"tool calls without results: {', '.join(pending)}")
        if message.role == "assistant":
            pending = [c.id for c in message.tool_calls]
    if pending:
        raise ValueError(f"tool calls without results: {', '.join(pending)}")


_RULES = {
    "turn/start": _turn_start,
    "turn/end": _turn_end,
    "step/start": _step_start,
    "step/end": _step_end,
    "assistant/message": _assistant_message,
    "tool/call": _tool_call,
    "tool/result": _tool_result,
    "user/message": _user_message,
    "context/imported": _context_imported,
    "compaction/summary": _compaction,
    "output/validated": _output,
    "tool/approval_requested": _approval_requested,
    "tool/approval_decided": _approval_decided,
    "model/called": _model_called,
}
