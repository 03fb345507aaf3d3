"""How the command draws things: the forest as a tree, sessions and digests as tables, log events, contexts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from stellate.cli.columns import clip, plural
from stellate.log.events import Event
from stellate.log.messages import AssistantMessage, Message, ToolMessage
from stellate.store import SessionRecord

if TYPE_CHECKING:
    from stellate.agent import SessionDigest, TopologyNode

__all__ = [
    "clip",
    "context_table",
    "digest_table",
    "event_line",
    "forest_tree",
    "plural",
    "session_table",
]


def forest_tree(
    title: str, roots: Sequence[TopologyNode], digests: Mapping[str, SessionDigest], *, current: str | None = None
) -> Tree:
    """The forest under ``title``: one node per session with its label, id, turns, memory and pending insight."""
    tree = Tree(Text(title, style="bold"))
    stack = [(tree, root) for root in reversed(roots)]
    while stack:
        parent, node = stack.pop()
        branch = parent.add(_node_label(node, digests.get(node.id), node.id == current))
        stack.extend((branch, child) for child in reversed(node.children))
    return tree


def _node_label(node: TopologyNode, digest: SessionDigest | None, is_current: bool) -> Text:
    label = Text.assemble(
        (node.label or "(no label)", "bold"),
        "  ",
        (node.id, "dim"),
        f"  {plural(node.turn_count, 'turn')}",
    )
    if node.status != "active":
        label.append(f"  [{node.status}]", style="yellow")
    if is_current:
        label.append("  ◀ current", style="bold cyan")
    if digest is not None and digest.memory:
        label.append(f"\nmemory: {clip(digest.memory)}", style="italic")
    if digest is not None and digest.insight:
        label.append(f"\ninsight pending: {clip(digest.insight)}", style="magenta")
    return label


def digest_table(digests: Iterable[SessionDigest]) -> Table:
    """Digests as the reflection layer reads them."""
    table = Table(title="Session digests", title_justify="left", expand=False)
    for column in ("id", "label", "status", "turns", "memory", "insight"):
        table.add_column(column, overflow="fold" if column in ("memory", "insight") else "ellipsis")
    for d in digests:
        cells = (d.id, d.label, d.status, str(d.turn_count), clip(d.memory, 60), clip(d.insight, 40))
        table.add_row(*(Text(cell) for cell in cells))  # Text: model output is not rich markup
    return table


def session_table(records: Iterable[SessionRecord], *, current: str | None = None) -> Table:
    """Sessions one per row: id, label, status, turns, last activity and memory; ``current`` is marked."""
    table = Table(show_header=True, expand=True, box=None, padding=(0, 2, 0, 0))
    for column in ("id", "label", "status", "turns", "last active"):
        table.add_column(column, no_wrap=True, ratio=None)
    table.add_column("memory", no_wrap=True, overflow="ellipsis", ratio=1, min_width=8)  # the column that gives way
    for r in records:
        label = Text(r.slots.label or "(no label)", style="bold")
        if r.id == current:
            label.append("  ◀ current", style="bold cyan")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.slots.last_activity / 1000))
        status = Text(r.slots.status, style="" if r.slots.status == "active" else "yellow")
        table.add_row(Text(r.id, "dim"), label, status, str(r.turn_count), when, Text(clip(r.slots.memory, 40)))
    return table


def event_line(event: Event) -> Text:
    """One log event on one line: seq, type and what it carries."""
    return Text.assemble(
        (f"{event.seq:>5}  ", "dim"),
        (f"{event.type:<18}", _TYPE_STYLES.get(event.type, "")),
        " ",
        clip(_event_summary(event), 110),  # a plain str in assemble is not parsed as markup
    )


_TYPE_STYLES = {
    "turn/start": "bold",
    "turn/end": "bold",
    "user/message": "cyan",
    "assistant/message": "green",
    "tool/call": "yellow",
    "tool/result": "yellow",
}


def _event_summary(event: Event) -> str:
    data = event.data
    if event.type == "assistant/message" and data.get("tool_calls"):
        calls = ", ".join(str(c.get("name")) for c in data["tool_calls"] if isinstance(c, dict))
        return f"{data.get('content') or ''} → calls {calls}".strip()
    if event.type == "tool/call":
        return f"{data.get('name')}({data.get('arguments')})"
    if event.type == "model/called":
        return _call_summary(data)
    for key in ("content", "label", "summary", "reason"):
        if isinstance(data.get(key), str) and data.get(key):
            turn = f"turn {data['turn']}: " if "turn" in data and key == "reason" else ""
            return turn + str(data[key])
    if "turn" in data:
        return f"turn {data['turn']}"
    return json.dumps(data, ensure_ascii=False) if data else ""


def _call_summary(data: dict[str, object]) -> str:
    def count(key: str) -> str:
        value = data.get(key)
        return "—" if value is None else f"{value:,}" if isinstance(value, int) else str(value)

    return (
        f"turn {data.get('turn')} step {data.get('step')}: {data.get('model')}, {count('input_tokens')} in / "
        f"{count('output_tokens')} out tokens, {data.get('latency_ms')} ms"
    )


def context_table(messages: Sequence[Message]) -> Table:
    """The messages of one model call, in order, with their roles."""
    table = Table(show_header=True, expand=False, show_lines=True)
    table.add_column("#", justify="right", style="dim")
    table.add_column("role")
    table.add_column("content", overflow="fold")
    for index, message in enumerate(messages):
        table.add_row(str(index), message.role, Text(_message_text(message)))
    return table


def _message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = "\n".join(f"→ {c.name}({c.arguments})" for c in message.tool_calls)
        return f"{message.content}\n{calls}".strip()
    if isinstance(message, ToolMessage):
        return f"[{message.name}{' error' if message.is_error else ''}] {message.content}"
    return message.content
