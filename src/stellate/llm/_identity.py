"""What every adapter reports about itself, and the closing protocol of adapters holding resources."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["AdapterIdentity", "ClosingAdapter"]


class AdapterIdentity:
    """The three read-only facts an `LLMAdapter` reports: provider, model and context window."""

    def __init__(self, *, provider: str, model: str, max_context_tokens: int) -> None:
        self._provider = provider
        self._model = model
        self._max_context_tokens = max_context_tokens

    @property
    def provider(self) -> str:
        """Provider name recorded on replies."""
        return self._provider

    @property
    def model(self) -> str:
        """Model name recorded on replies (and sent to the provider)."""
        return self._model

    @property
    def max_context_tokens(self) -> int:
        """Context window of the model, used for the compression threshold."""
        return self._max_context_tokens


class ClosingAdapter(AdapterIdentity):
    """An adapter holding a resource (an HTTP client, a loaded model): close it, or use ``async with``."""

    async def aclose(self) -> None:
        """Release what the adapter holds; safe to call twice."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
