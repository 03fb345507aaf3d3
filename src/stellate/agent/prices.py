"""The price table users set, and what a model call cost by it.

stellate ships no prices: they change too often to be right for long. A `Prices` table maps a model name (as
the provider reports it, or ``provider/model``) to a `Price` per million input and output tokens, in whatever
currency the table is written in. A call's cost is known only when its model is in the table and the provider
reported both token counts; otherwise it is ``None`` (unknown), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from stellate.errors import UsageError
from stellate.log.usage import CallUsage

__all__ = ["Price", "Prices", "call_cost", "merge_prices", "parse_price", "price_for", "sum_costs"]

_PER = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """What one model charges, per million tokens."""

    input: float
    """Per million input (prompt) tokens."""
    output: float
    """Per million output (completion) tokens."""

    def __post_init__(self) -> None:
        if not all(math.isfinite(value) and value >= 0 for value in (self.input, self.output)):
            raise UsageError("a price per million tokens must be a finite number >= 0", code="config_invalid")


Prices: TypeAlias = Mapping[str, Price]
"""Model name (or ``provider/model``) -> its price."""


def price_for(prices: Prices, provider: str, model: str) -> Price | None:
    """The price of ``model``: ``provider/model`` first, then the bare model name; None when the table has neither."""
    return prices.get(f"{provider}/{model}") or prices.get(model)


def call_cost(prices: Prices, call: CallUsage) -> float | None:
    """What ``call`` cost; None when its model is not priced or a token count is unknown."""
    price = price_for(prices, call.provider, call.model)
    if price is None or call.input_tokens is None or call.output_tokens is None:
        return None
    return (call.input_tokens * price.input + call.output_tokens * price.output) / _PER


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The sum of some calls' costs: unknown as soon as one is, and unknown for no calls (nothing to show)."""
    total: float | None = None
    for index, cost in enumerate(costs):
        if cost is None:
            return None
        total = cost if index == 0 else (total or 0.0) + cost
    return total


def parse_price(text: str) -> tuple[str, Price]:
    """A price from the command line: ``MODEL=INPUT,OUTPUT`` (per million tokens), e.g. ``gpt-4o-mini=0.15,0.6``.

    Raises:
        UsageError: ``config_invalid`` when the text is not in that form.
    """
    model, sep, pair = text.rpartition("=")
    parts = pair.split(",")
    try:
        if not sep or not model.strip() or len(parts) != 2:
            raise ValueError(text)
        return model.strip(), Price(input=float(parts[0]), output=float(parts[1]))
    except ValueError as exc:
        raise UsageError(
            f"price {text!r} is not MODEL=INPUT,OUTPUT (per million tokens), e.g. gpt-4o-mini=0.15,0.6",
            code="config_invalid",
        ) from exc


def merge_prices(*tables: Mapping[str, Price]) -> dict[str, Price]:
    """Later tables win, model by model (the config file, then the flags)."""
    merged: dict[str, Price] = {}
    for table in tables:
        merged.update(table)
    return merged
