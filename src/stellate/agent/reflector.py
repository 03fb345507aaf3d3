"""The optional reflector: reads every branch's digest, writes a synthesis and targeted insights.

Seed 001's only cross-session channel: memories go up to a reflection layer, insights come back down to
the sessions that need them. The model answers in JSON; an answer that is not JSON becomes a synthesis
with no insights rather than an error, and insights for sessions that do not exist are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stellate.agent.topology import SessionDigest
from stellate.llm.types import LLMAdapter, LLMRequest
from stellate.log.messages import SystemMessage, UserMessage
from stellate.session.types import Language

__all__ = ["REFLECT_PROMPTS", "Reflection", "Reflector", "parse_reflection"]

REFLECT_PROMPTS: dict[Language, str] = {
    "en": (
        "You oversee several branches of one piece of work. Each branch is a separate conversation; you see "
        "only the short memory each one publishes. Write (1) a synthesis: where the work as a whole stands, "
        "and (2) insights: for the branches that would benefit, one short, concrete note each (a fact another "
        "branch found, a conflict, a next step). Give no insight to a branch that needs none. Answer with JSON "
        'only: {"synthesis": "...", "insights": [{"session_id": "<id exactly as given>", "content": "..."}]}'
    ),
    "zh": (
        "你统筹同一项工作的多个分支。每个分支是一段独立的对话，你只能看到各分支发布的简短记忆。请写出："
        "(1) synthesis：整项工作目前的进展综述；(2) insights：为确实需要的分支各写一条简短、具体的提示"
        "（其他分支发现的事实、存在的冲突、下一步建议），不需要的分支不要写。只输出 JSON："
        '{"synthesis": "...", "insights": [{"session_id": "<原样给出的 id>", "content": "..."}]}'
    ),
}

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reflection:
    """What one reflection produced."""

    synthesis: str
    insights: dict[str, str] = field(default_factory=dict)
    """Insight per session id (only ids that were shown to the model)."""
    dropped: tuple[str, ...] = ()
    """Session ids the model named that do not exist (their insights were not written)."""


class Reflector:
    """Asks a model to reflect over session digests.

    Args:
        llm: The model to ask.
        language: Language of the built-in prompt.
        instructions: Replaces the built-in prompt.
    """

    def __init__(self, llm: LLMAdapter, *, language: Language = "en", instructions: str | None = None) -> None:
        self.llm = llm
        self.instructions = instructions or REFLECT_PROMPTS[language]

    async def reflect(self, digests: Sequence[SessionDigest], *, current_synthesis: str | None = None) -> Reflection:
        """One reflection over ``digests``."""
        lines = [f"- [session_id={d.id}] {d.label or '(no label)'}: {d.memory or '(no memory yet)'}" for d in digests]
        material = ("Current synthesis:\n" + current_synthesis + "\n\n" if current_synthesis else "") + (
            "Branches:\n" + "\n".join(lines)
        )
        response = await self.llm.complete(
            LLMRequest(messages=[SystemMessage(content=self.instructions), UserMessage(content=material)])
        )
        return parse_reflection(response.message.content, known={d.id for d in digests})


def parse_reflection(text: str, *, known: set[str]) -> Reflection:
    """Read the model's JSON answer, keeping insights only for ``known`` session ids."""
    cleaned = _THINK.sub("", text).strip()
    found = _JSON_OBJECT.search(cleaned)
    try:
        data: Any = json.loads(found.group(0)) if found else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return Reflection(synthesis=cleaned)
    insights: dict[str, str] = {}
    dropped: list[str] = []
    for item in data.get("insights") or []:
        if not isinstance(item, dict):
            continue
        sid, content = str(item.get("session_id", "")), item.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        if sid in known:
            insights[sid] = content.strip()
        else:
            dropped.append(sid)
    synthesis = data.get("synthesis")
    return Reflection(
        synthesis=synthesis if isinstance(synthesis, str) else "", insights=insights, dropped=tuple(dropped)
    )
