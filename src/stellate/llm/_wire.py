"""Small wire-format rules shared by every adapter: output caps, call ids, tool arguments, JSON bodies."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from stellate.llm.types import DEFAULT_MAX_OUTPUT_TOKENS, LLMRequest
from stellate.log.messages import Message

__all__ = [
    "UNKNOWN_TOOL",
    "RawJSON",
    "WireCache",
    "dump_json",
    "encode_object",
    "new_call_id",
    "parse_tool_arguments",
    "resolve_max_tokens",
]

W = TypeVar("W")

#: Tool name recorded when a provider streams a call without one; the engine answers it with an error result.
UNKNOWN_TOOL = "unknown_tool"


def dump_json(value: object) -> bytes:
    """``value`` as a request body: compact UTF-8 JSON, byte for byte what httpx (0.28 on) sends for ``json=``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass(frozen=True, slots=True)
class RawJSON:
    """A value already encoded as JSON, spliced into a body by `encode_object` as it is."""

    data: bytes
    """The encoded value (an array, object, string...)."""


def encode_object(body: Mapping[str, Any]) -> bytes:
    """`dump_json` of ``body``, except that each top-level `RawJSON` value is spliced in, not encoded.

    The result is the bytes `dump_json` gives for the body holding the decoded values instead, so a large part
    encoded once (a transcript) can be reused without encoding it again.
    """
    # A compact JSON object is its members joined by commas; each member is encoded exactly as inside the whole.
    members = [
        dump_json({key: None})[1:-5] + value.data if isinstance(value, RawJSON) else dump_json({key: value})[1:-1]
        for key, value in body.items()
    ]
    return b"{" + b",".join(members) + b"}"


def resolve_max_tokens(request: LLMRequest, adapter_option: int | None) -> int:
    """Output cap for one call: the request's, else the adapter's, else `DEFAULT_MAX_OUTPUT_TOKENS`."""
    if request.max_output_tokens is not None:
        return request.max_output_tokens
    if adapter_option is not None:
        return adapter_option
    return DEFAULT_MAX_OUTPUT_TOKENS


def new_call_id() -> str:
    """A fresh tool-call id, for providers (some local servers) that stream calls without one."""
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_tool_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments object encoded in ``raw``, or ``None`` when ``raw`` is not a JSON object.

    Malformed arguments are kept raw in the log (the engine answers them with an error result), but providers
    refuse them when the history is sent back, so adapters send ``{}`` in their place.
    """
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class WireCache(Generic[W]):
    """The wire form of each message, converted once per message object.

    A session's transcript keeps the same (immutable) message objects from call to call, so only the messages
    new since the last call are converted; the unchanged prefix is looked up by identity. The cache holds a
    strong reference to each message it keys, so an id cannot be reused while its entry lives, and it is cut
    back to the messages of the current call once it grows well past them (several sessions may share one
    adapter). Callers must not mutate the wire forms they get.

    Args:
        convert: The wire form of one message.
    """

    def __init__(self, convert: Callable[[Message], W]) -> None:
        self._convert = convert
        self._entries: dict[int, tuple[Message, W]] = {}

    def convert_all(self, messages: Sequence[Message], *, keep: Sequence[Message] | None = None) -> list[W]:
        """The wire forms of ``messages``, in order (cached ones reused).

        Args:
            messages: The messages to convert.
            keep: The call's whole transcript, when ``messages`` is only part of it: a cut keeps its entries.
        """
        entries, convert = self._entries, self._convert
        out: list[W] = []
        for message in messages:
            hit = entries.get(id(message))
            if hit is None or hit[0] is not message:
                hit = entries[id(message)] = (message, convert(message))
            out.append(hit[1])
        live = messages if keep is None else keep
        if len(entries) > 4 * len(live) + 256:
            # An id found in the cache is that message's: the entry's strong reference keeps the id taken.
            self._entries = {id(m): entries[id(m)] for m in live if id(m) in entries}
        return out
