"""Slot folding: the current label, prompt, memory, insight and config of a session.

Slots are folded from a session's *own* events only: a fork inherits history, never slots (seed 001).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from stellate.log._copy import replacer

if TYPE_CHECKING:
    from stellate.log.events import Event

__all__ = ["SLOT_EVENT_TYPES", "SessionStatus", "Slots", "fold_slots"]

SessionStatus: TypeAlias = Literal["active", "archived"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Slots:
    """Current values derived from a session's own events."""

    label: str = ""
    status: SessionStatus = "active"
    system_prompt: str | None = None
    memory: str | None = None
    insight: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    """Frozen configuration (system prompt, skills, names of the adapter, tools and profile)."""
    last_activity: int = 0
    """Time of the newest event, epoch ms."""


replace = replacer(Slots)


def fold_slots(slots: Slots, events: Iterable[Event]) -> Slots:
    """Apply ``events`` (a session's own) to ``slots``."""
    newest = slots.last_activity
    for event in events:
        if event.type in SLOT_EVENT_TYPES:
            slots = _apply(slots, event)
        newest = max(newest, event.time)
    return slots if newest == slots.last_activity else replace(slots, last_activity=newest)


def _apply(slots: Slots, event: Event) -> Slots:
    data = event.data
    match event.type:
        case "session/created" | "label/set":
            slots = replace(slots, label=data["label"])
        case "system_prompt/set":
            slots = replace(slots, system_prompt=data["content"])
        case "memory/put":
            slots = replace(slots, memory=data["content"])
        case "insight/put":
            slots = replace(slots, insight=data["content"])
        case "insight/consumed" if "content" in data and data["content"] != slots.insight:
            pass  # another insight arrived while the call that consumed this one ran: it stays pending
        case "insight/consumed" | "insight/cleared":
            slots = replace(slots, insight=None)
        case "session/archived":
            slots = replace(slots, status="archived")
        case "config/frozen":
            slots = replace(slots, config=data["config"])
    return slots


#: Event types that change a slot.
SLOT_EVENT_TYPES = frozenset(
    {
        "session/created",
        "label/set",
        "system_prompt/set",
        "memory/put",
        "insight/put",
        "insight/consumed",
        "insight/cleared",
        "session/archived",
        "config/frozen",
    }
)
