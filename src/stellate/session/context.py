"""Context assembly (DESIGN.md §3, seed 001) and the choice of what to compress.

Order, fixed: system prompt → ``<session_identity>`` from the label → insight → compaction summary →
history since the summary (the new user message is its last entry). Memory is never part of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from stellate.log.messages import Message, SystemMessage, ToolMessage
from stellate.log.state import Slots
from stellate.session.history import History
from stellate.session.types import Language

__all__ = ["CompactionPlan", "build_context", "build_prefix", "identity_text", "plan_compaction", "summary_text"]

_IDENTITY = {
    "en": '<session_identity>\nThis conversation is the branch "{label}" of a larger piece of work. '
    "Stay within its scope.\n</session_identity>",
    "zh": "<session_identity>\n本对话是一项更大工作中的分支「{label}」，请围绕该分支的范围作答。\n</session_identity>",
}
_INSIGHT = {
    "en": "<insight>\nA note from the layer that oversees every branch of this work:\n{insight}\n</insight>",
    "zh": "<insight>\n来自统筹所有分支的反思层的提示：\n{insight}\n</insight>",
}
_SUMMARY = {
    "en": "<conversation_summary>\nSummary of the earlier part of this conversation:\n"
    "{summary}\n</conversation_summary>",
    "zh": "<conversation_summary>\n本对话较早部分的摘要：\n{summary}\n</conversation_summary>",
}


def identity_text(label: str, language: Language = "en") -> str:
    """The ``<session_identity>`` system text for ``label``."""
    return _IDENTITY[language].format(label=label)


def summary_text(summary: str, language: Language = "en") -> str:
    """The system text that carries a compaction summary."""
    return _SUMMARY[language].format(summary=summary)


def build_prefix(slots: Slots, summary: str | None, language: Language = "en") -> list[Message]:
    """System messages that precede the history: prompt, identity, insight, summary (each only if set)."""
    prefix: list[Message] = []
    if slots.system_prompt:
        prefix.append(SystemMessage(content=slots.system_prompt))
    if slots.label:
        prefix.append(SystemMessage(content=identity_text(slots.label, language)))
    if slots.insight:
        prefix.append(SystemMessage(content=_INSIGHT[language].format(insight=slots.insight)))
    if summary:
        prefix.append(SystemMessage(content=summary_text(summary, language)))
    return prefix


def build_context(history: History, language: Language = "en") -> list[Message]:
    """The exact messages of the next model call, from the session's folded log."""
    return history.history_messages(lead=build_prefix(history.slots, history.fold.summary, language))


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """What to summarize: closed-turn messages up to and including ``through_seq``."""

    through_seq: int
    messages: list[Message]
    """Messages to summarize, led by the previous summary (as a system message) when there is one."""


def plan_compaction(history: History, *, budget: int) -> CompactionPlan | None:
    """Choose the oldest closed-turn messages to summarize so the rest weighs at most ``budget``.

    The cut never splits a tool-call group nor the messages of one event; None when nothing can be cut.
    """
    fold = history.fold
    seqs, kept, weights = fold.kept_seqs, fold.kept, fold.kept_weights
    cut, remaining = 0, fold.kept_weight
    while cut < len(kept) and remaining > budget:
        remaining -= weights[cut]
        cut += 1
    while 0 < cut < len(kept) and (isinstance(kept[cut], ToolMessage) or seqs[cut] == seqs[cut - 1]):
        cut += 1  # summarize the whole group rather than split it
    if cut == 0:
        return None
    lead: list[Message] = [SystemMessage(content=fold.summary)] if fold.summary else []
    return CompactionPlan(through_seq=seqs[cut - 1], messages=lead + kept[:cut])
