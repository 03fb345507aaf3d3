"""Provider-neutral chat messages: what transcript derivation produces and LLM adapters consume."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from stellate.log.images import ImageRef, images_from_json, images_to_json

__all__ = [
    "AssistantMessage",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "message_from_json",
    "message_to_json",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call requested by the model."""

    id: str
    """Provider call id; a tool result answers it by this id."""
    name: str
    """Name of the tool to run."""
    arguments: str
    """Raw JSON text of the arguments exactly as the model produced it (it may be malformed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemMessage:
    """An instruction from the application, never from the user."""

    content: str
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """A message typed by the user."""

    content: str
    images: tuple[ImageRef, ...] = field(default=())
    """Images sent with the text, by reference (their bytes live in the store's blobs)."""
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """A model reply: text, tool calls, or both."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=())
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolMessage:
    """The result of one tool call, fed back to the model."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    images: tuple[ImageRef, ...] = field(default=())
    """Images the tool returned, sent where the provider accepts them in a tool result."""
    role: Literal["tool"] = "tool"


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def message_to_json(message: Message) -> dict[str, Any]:
    """Serialise a message into plain JSON data (used by events and exports)."""
    if isinstance(message, AssistantMessage):
        return {
            "role": "assistant",
            "content": message.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
        }
    if isinstance(message, ToolMessage):
        out: dict[str, Any] = {
            "role": "tool",
            "call_id": message.call_id,
            "name": message.name,
            "content": message.content,
            "is_error": message.is_error,
        }
    else:
        out = {"role": message.role, "content": message.content}
    if not isinstance(message, SystemMessage) and message.images:
        out["images"] = images_to_json(message.images)
    return out


def message_from_json(data: dict[str, Any]) -> Message:
    """Inverse of `message_to_json`.

    Raises:
        ValueError: ``data`` is not a message.
    """
    role = data.get("role")
    if role == "assistant":
        calls = tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in data.get("tool_calls", ())
        )
        return AssistantMessage(content=data.get("content", ""), tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            call_id=data["call_id"],
            name=data["name"],
            content=data["content"],
            is_error=bool(data.get("is_error")),
            images=images_from_json(data.get("images")),
        )
    if role == "user":
        return UserMessage(content=data["content"], images=images_from_json(data.get("images")))
    if role == "system":
        return SystemMessage(content=data["content"])
    raise ValueError(f"not a message role: {role!r}")
