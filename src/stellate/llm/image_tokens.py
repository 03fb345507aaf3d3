"""What an image costs in prompt tokens, by the rules the providers document.

- OpenAI (``detail: high``, the default for large images): scale to fit 2048 x 2048, then so the shorter side is at
  most 768; count the 512 px tiles; 85 + 170 per tile.
- Anthropic: scale so the long edge is at most 1568 px and the image at most about 1,600 tokens (1.2 megapixels);
  width x height / 750.

A counter that does not know the provider (the session's token counters) takes the larger of the two, so an
estimate never falls short of either provider's count; `image_tokens` with a provider gives that provider's number.
"""

from __future__ import annotations

import math
from typing import Final

from stellate.log.images import ImageRef
from stellate.log.messages import Message, ToolMessage, UserMessage

__all__ = [
    "UNKNOWN_SIZE",
    "anthropic_image_tokens",
    "image_tokens",
    "message_image_tokens",
    "openai_image_tokens",
]

UNKNOWN_SIZE: Final = (1024, 1024)
"""The size assumed for an image whose header gave none."""
_ANTHROPIC_LONG_EDGE: Final = 1568
_ANTHROPIC_MAX_PIXELS: Final = 1_200_000  # "about 1,600 tokens"


def openai_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``detail: high`` image on OpenAI: 85 + 170 per 512 px tile after scaling."""
    scale = min(1.0, 2048 / max(width, height))
    scale *= min(1.0, 768 / (min(width, height) * scale))
    return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)


def anthropic_image_tokens(width: int, height: int) -> int:
    """Tokens of an image on Anthropic: width x height / 750 after scaling to its limits (1568 px, 1.2 megapixels)."""
    scale = min(1.0, _ANTHROPIC_LONG_EDGE / max(width, height), math.sqrt(_ANTHROPIC_MAX_PIXELS / (width * height)))
    return math.ceil(width * scale * height * scale / 750)


def image_tokens(image: ImageRef, provider: str | None = None) -> int:
    """Tokens of ``image`` for ``provider`` (``openai``, ``anthropic``); the larger of the two for any other."""
    width, height = (image.width, image.height) if image.width and image.height else UNKNOWN_SIZE
    if provider == "openai":
        return openai_image_tokens(width, height)
    if provider == "anthropic":
        return anthropic_image_tokens(width, height)
    return max(openai_image_tokens(width, height), anthropic_image_tokens(width, height))


def message_image_tokens(message: Message, provider: str | None = None) -> int:
    """Tokens of the images of ``message`` (0 for a message without any)."""
    if not isinstance(message, UserMessage | ToolMessage) or not message.images:
        return 0
    return sum(image_tokens(image, provider) for image in message.images)
