"""The LLM layer: the adapter protocol, deterministic models, retries, token counting and the adapter registry.

Provider adapters live in their own modules and need an extra, so they are not imported here: use
``stellate.llm.openai.OpenAIAdapter``, ``stellate.llm.anthropic.AnthropicAdapter`` and
``stellate.llm.local.LlamaCppAdapter``, or resolve them by name with `create_adapter`.
"""

from stellate.llm._retry import RetryNotice, RetryPolicy
from stellate.llm.registry import (
    BUILTIN_ADAPTERS,
    AdapterFactory,
    AdapterRegistry,
    create_adapter,
    default_registry,
    register_adapter,
    resolve_adapter,
)
from stellate.llm.scripted import Delay, FunctionLLM, Reply, ScriptedLLM, ScriptStep, response_events, tool_call
from stellate.llm.tokens import (
    CachingTokenCounter,
    HeuristicTokenCounter,
    TiktokenCounter,
    default_token_counter,
    estimate_from_usage,
    estimate_text_tokens,
)
from stellate.llm.types import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    LLMAdapter,
    LLMRequest,
    LLMResponse,
    NativeOutput,
    OutputSchema,
    ResponseDone,
    StopReason,
    StreamEvent,
    TextDelta,
    TokenCounter,
    ToolCallDelta,
    ToolCallDone,
    ToolSpec,
    Usage,
    UsageReport,
)

__all__ = [
    "CachingTokenCounter",
    "BUILTIN_ADAPTERS",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "AdapterFactory",
    "AdapterRegistry",
    "Delay",
    "FunctionLLM",
    "HeuristicTokenCounter",
    "LLMAdapter",
    "LLMRequest",
    "LLMResponse",
    "NativeOutput",
    "OutputSchema",
    "Reply",
    "ResponseDone",
    "RetryNotice",
    "RetryPolicy",
    "ScriptStep",
    "ScriptedLLM",
    "StopReason",
    "StreamEvent",
    "TextDelta",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolSpec",
    "Usage",
    "UsageReport",
    "create_adapter",
    "default_registry",
    "default_token_counter",
    "estimate_from_usage",
    "estimate_text_tokens",
    "register_adapter",
    "resolve_adapter",
    "response_events",
    "tool_call",
]
