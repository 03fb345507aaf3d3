"""How a past model call filled the model's context window, part by part, rebuilt from the log on demand.

The context of the call is rebuilt as `stellate.agent.inspection.context_at` does (the log up to the reply the
call produced), cut into the parts `stellate.session.context.build_context` assembles: system prompt, session
identity, insight, compaction summary and history, plus the tool definitions offered. Each part is counted
with the session's token counter (an estimate: the provider's own count of the whole prompt is given beside it
when it reported one) and set against the window and the compression threshold of the session's model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from stellate.errors import UsageError
from stellate.llm.tokens import default_token_counter
from stellate.llm.types import TokenCounter, ToolSpec
from stellate.log.messages import Message, SystemMessage
from stellate.log.usage import MODEL_CALLED, call_usage
from stellate.session.context import build_prefix
from stellate.session.history import History
from stellate.session.types import Language
from stellate.store import SessionId

if TYPE_CHECKING:
    from stellate.session.session import Session
    from stellate.store import BaseStore

__all__ = ["ContextPart", "ContextWindow", "PartName", "context_window"]

PartName: TypeAlias = Literal["system_prompt", "identity", "insight", "summary", "history", "tools"]
_LOOKBACK = 8
_CALL_AFTER_REPLY = 4  # a model/called event follows its reply within insight/consumed and step/end


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPart:
    """One part of a call's context."""

    name: PartName
    tokens: int
    """Estimated by the session's token counter."""
    messages: int
    """How many messages it took (0 for the tool definitions, which travel beside the messages)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextWindow:
    """A past call's context against the model's window."""

    session_id: str
    reply_seq: int
    """Seq of the assistant message the call produced."""
    parts: list[ContextPart]
    """In the order the context is assembled; parts the call did not have are left out."""
    total_tokens: int
    """The parts' sum."""
    reported_input_tokens: int | None
    """The provider's count of the prompt, when it reported one."""
    window: int
    """The context window of the session's model (as configured now)."""
    threshold: int
    """Tokens above which the session compresses its history before a call."""
    model: str
    """The model the call was made with (from its record, else the session's model)."""


async def context_window(session: Session, reply_seq: int | None, *, tools: Sequence[ToolSpec]) -> ContextWindow:
    """The context window of the call that produced the assistant message at ``reply_seq`` (default: the last).

    Raises:
        UsageError: ``reply_seq`` is not an assistant message made by a model call, or no call was made yet.
    """
    store = session.store
    seq = reply_seq if reply_seq is not None else await _last_call(store, session.id)
    found = await store.read_events(session.id, start=seq, stop=seq + 1) if seq >= 0 else []
    if not found or found[0].type != "assistant/message" or "provider" not in found[0].data:
        raise UsageError(f"seq {seq} of session {session.id} is not an assistant message made by a model call")
    past = History(inherited=session.record.inherited)
    past.absorb(await store.read_events(session.id, stop=seq))
    runtime = session.runtime
    counter = runtime.token_counter or default_token_counter()
    parts = _parts(past, counter, tools, runtime.language)
    after = await store.read_events(session.id, start=seq + 1, stop=seq + 1 + _CALL_AFTER_REPLY, types=(MODEL_CALLED,))
    call = call_usage(after[0]) if after else None
    window = runtime.llm.max_context_tokens
    return ContextWindow(
        session_id=session.id,
        reply_seq=seq,
        parts=parts,
        total_tokens=sum(p.tokens for p in parts),
        reported_input_tokens=call.input_tokens if call is not None else None,
        window=window,
        threshold=int(runtime.compress_threshold * window),
        model=call.model if call is not None else found[0].data.get("model") or runtime.llm.model,
    )


def _parts(past: History, counter: TokenCounter, tools: Sequence[ToolSpec], language: Language) -> list[ContextPart]:
    slots, summary = past.slots, past.fold.summary
    # build_prefix adds each system message only when its slot is set, in this order.
    named: list[tuple[PartName, bool]] = [
        ("system_prompt", bool(slots.system_prompt)),
        ("identity", bool(slots.label)),
        ("insight", bool(slots.insight)),
        ("summary", bool(summary)),
    ]
    prefix = iter(build_prefix(slots, summary, language))
    parts = [_part(name, [next(prefix)], counter) for name, present in named if present]
    parts.append(_part("history", past.history_messages(), counter))
    if tools:
        text = json.dumps([{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools])
        parts.append(ContextPart(name="tools", tokens=counter.count([SystemMessage(content=text)]), messages=0))
    return parts


def _part(name: PartName, messages: list[Message], counter: TokenCounter) -> ContextPart:
    return ContextPart(name=name, tokens=counter.count(messages) if messages else 0, messages=len(messages))


async def _last_call(store: BaseStore, session_id: SessionId) -> int:
    replies = await store.read_events(session_id, types=("assistant/message",), reverse=True, limit=_LOOKBACK)
    # An opening message written by a fork is no model call: it carries no provider.
    made = next((reply.seq for reply in replies if "provider" in reply.data), None)
    if made is None:
        raise UsageError(f"session {session_id} has made no model call yet")
    return made
