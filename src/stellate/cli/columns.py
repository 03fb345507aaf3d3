"""Plain text for piped output: aligned columns without rich, so a script's `stellate sessions list` starts fast.

A terminal gets rich's table (`stellate.cli.render.session_table`); a pipe or a file gets the same columns and
cells from here, padded with spaces, the memory column cut to the width with an ellipsis.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stellate.store import SessionRecord

__all__ = ["clip", "plural", "session_columns"]

_HEADERS = ("id", "label", "status", "turns", "last active", "memory")
_GAP = "  "
_MEMORY_CLIP = 40
_CURRENT = "  ◀ current"


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def clip(text: str | None, width: int = 100) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def session_columns(records: Sequence[SessionRecord], *, current: str | None, width: int) -> str:
    """Sessions one per line under a header row, as `session_table` shows them; ``current`` is marked."""
    rows = [_HEADERS]
    for r in records:
        label = (r.slots.label or "(no label)") + (_CURRENT if r.id == current else "")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.slots.last_activity / 1000))
        rows.append((r.id, label, r.slots.status, str(r.turn_count), when, clip(r.slots.memory, _MEMORY_CLIP)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADERS) - 1)]
    room = max(8, width - sum(widths) - len(_GAP) * len(widths))  # the memory column gives way, as in the table
    lines = []
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        memory = row[-1] if len(row[-1]) <= room else row[-1][: room - 1] + "…"
        lines.append((_GAP.join(cells) + _GAP + memory).rstrip())
    return "\n".join(lines) + "\n"
