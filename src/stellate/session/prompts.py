"""Default compress and consolidate functions, built from an adapter, with our own prompts.

Seed decision #12: the framework hands these functions no model; applications close over the one they
want. These factories do exactly that for the common case.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stellate.llm.types import LLMAdapter, LLMRequest
from stellate.log.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from stellate.session.types import CompressFn, ConsolidateFn, Language

__all__ = [
    "COMPRESS_PROMPTS",
    "CONSOLIDATE_PROMPTS",
    "default_compress_fn",
    "default_consolidate_fn",
    "render_messages",
]

COMPRESS_PROMPTS: dict[Language, str] = {
    "en": (
        "You condense conversations so they can continue without their full history. Write a summary that "
        "keeps every fact, decision, number, name, open question and commitment the conversation still depends "
        "on, and what the user is trying to achieve. Fold any earlier summary into the new one. Leave out "
        "pleasantries and repetition. Answer with the summary only, as short plain prose or bullet points."
    ),
    "zh": (
        "你负责压缩对话，使其在没有完整历史的情况下仍能继续。请写一份摘要，保留对话仍依赖的所有事实、决定、"
        "数字、名称、未决问题和承诺，以及用户想达成的目标；若有先前的摘要，请并入新摘要。省略寒暄与重复内容。"
        "只输出摘要本身，使用简洁的段落或要点。"
    ),
}

CONSOLIDATE_PROMPTS: dict[Language, str] = {
    "en": (
        "You maintain the memory of one branch of a larger piece of work: a short description that other parts "
        "of the system read to know what this branch has covered. From the current memory (if any) and the "
        "conversation, write the new memory: the branch's topic, what has been established or decided, what is "
        "still open, and anything another branch would need to know. At most about 150 words. Answer with the "
        "memory only."
    ),
    "zh": (
        "你负责维护一项更大工作中某个分支的记忆：系统的其他部分会读取这段简短描述，以了解该分支已经涵盖的内容。"
        "根据当前记忆（如有）和对话，写出新的记忆：分支的主题、已确认或已决定的事项、仍未解决的问题，"
        "以及其他分支需要知道的信息。不超过约 300 字。只输出记忆本身。"
    ),
}

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_HEADINGS: dict[Language, tuple[str, str, str]] = {
    "en": ("Previous summary", "Current memory", "Conversation"),
    "zh": ("先前的摘要", "当前记忆", "对话记录"),
}


def render_messages(messages: Sequence[Message]) -> str:
    """A plain-text transcript, one ``role: text`` line per message, tool calls and results included."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = "".join(f" [calls {c.name}({c.arguments})]" for c in message.tool_calls)
            lines.append(f"assistant: {message.content}{calls}")
        elif isinstance(message, ToolMessage):
            lines.append(f"tool {message.name}{' (error)' if message.is_error else ''}: {message.content}")
        else:
            lines.append(f"{message.role}: {message.content}")
    return "\n".join(lines)


async def _ask(llm: LLMAdapter, instructions: str, material: str) -> str:
    response = await llm.complete(
        LLMRequest(messages=[SystemMessage(content=instructions), UserMessage(content=material)])
    )
    return _THINK.sub("", response.message.content).strip()


def default_compress_fn(llm: LLMAdapter, language: Language = "en") -> CompressFn:
    """A compress function that asks ``llm`` for a summary with our prompt."""
    previous_heading, _, conversation_heading = _HEADINGS[language]

    async def compress(messages: Sequence[Message]) -> str:
        parts: list[str] = []
        if messages and isinstance(messages[0], SystemMessage):
            parts.append(f"{previous_heading}:\n{messages[0].content}")
            messages = messages[1:]
        parts.append(f"{conversation_heading}:\n{render_messages(messages)}")
        return await _ask(llm, COMPRESS_PROMPTS[language], "\n\n".join(parts))

    return compress


def default_consolidate_fn(llm: LLMAdapter, language: Language = "en") -> ConsolidateFn:
    """A consolidate function that asks ``llm`` for the branch's new memory with our prompt."""
    _, memory_heading, conversation_heading = _HEADINGS[language]

    async def consolidate(memory: str | None, messages: Sequence[Message]) -> str:
        parts = [f"{memory_heading}:\n{memory}"] if memory else []
        parts.append(f"{conversation_heading}:\n{render_messages(messages)}")
        return await _ask(llm, CONSOLIDATE_PROMPTS[language], "\n\n".join(parts))

    return consolidate
