"""Image token costs (`stellate.llm.image_tokens`) by the providers' documented rules, and in the counters."""

from __future__ import annotations

import pytest

from stellate.llm.image_tokens import anthropic_image_tokens, image_tokens, openai_image_tokens
from stellate.llm.tokens import ByteBoundCounter, HeuristicTokenCounter
from stellate.log.images import ImageRef
from stellate.log.messages import UserMessage


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    # OpenAI's worked examples: 1024 x 1024 is 4 tiles; 2048 x 4096 scales to 768 x 1536, 6 tiles; 512 x 512 one.
    [(1024, 1024, 765), (2048, 4096, 1105), (512, 512, 255), (100, 100, 255)],
)
def test_openai_counts_85_plus_170_per_tile_after_scaling(width: int, height: int, tokens: int) -> None:
    """85 + 170 per 512 px tile, after fitting 2048 x 2048 and then a 768 px shorter side."""
    assert openai_image_tokens(width, height) == tokens


@pytest.mark.parametrize(
    ("width", "height", "tokens"),
    # Anthropic's table: 200 x 200 ~ 54, 1000 x 1000 ~ 1334, 1092 x 1092 ~ 1590 (the largest square kept as it is);
    # 2000 x 2000 is scaled down to about 1,600 tokens.
    [(200, 200, 54), (1000, 1000, 1334), (1092, 1092, 1590), (2000, 2000, 1600)],
)
def test_anthropic_counts_pixels_over_750_after_scaling(width: int, height: int, tokens: int) -> None:
    """width x height / 750, after scaling to a 1568 px long edge and 1.2 megapixels."""
    assert anthropic_image_tokens(width, height) == tokens


def test_without_a_provider_the_larger_rule_counts() -> None:
    """A counter that does not know the provider never undercounts either."""
    ref = ImageRef(sha256="0" * 64, media_type="image/png", size=10, width=1000, height=1000)
    assert image_tokens(ref) == max(image_tokens(ref, "openai"), image_tokens(ref, "anthropic")) == 1334


def test_counters_add_the_images_of_a_message() -> None:
    """The heuristic and the byte bound both count a message's images on top of its text."""
    ref = ImageRef(sha256="0" * 64, media_type="image/png", size=10, width=512, height=512)
    plain, with_image = UserMessage(content="look"), UserMessage(content="look", images=(ref, ref))
    for counter in (HeuristicTokenCounter(), ByteBoundCounter()):
        assert counter.count([with_image]) - counter.count([plain]) == 2 * image_tokens(ref)
