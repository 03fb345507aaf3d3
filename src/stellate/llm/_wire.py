"""Small wire-format rules shared by every adapter: output caps, call ids, tool arguments."""

from __future__ import annotations

import json
import uuid
from typing import Any

from stellate.llm.types import DEFAULT_MAX_OUTPUT_TOKENS, LLMRequest

__all__ = ["UNKNOWN_TOOL", "new_call_id", "parse_tool_arguments", "resolve_max_tokens"]

#: Tool name recorded when a provider streams a call without one; the engine answers it with an error result.
UNKNOWN_TOOL = "unknown_tool"


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
