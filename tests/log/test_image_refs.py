"""Image references (`stellate.log.images`): sniffing by magic number, sizes from headers, and their JSON in events."""

from __future__ import annotations

import pytest

from stellate.errors import UsageError
from stellate.log import make_event, validate_event
from stellate.log.images import image_ref_of, images_from_json, images_to_json, sniff_image
from stellate.log.messages import UserMessage, message_from_json, message_to_json
from stellate.testing.images import gif_header, jpeg_header, png, webp_header


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (png(5, 7), ("image/png", 5, 7)),
        (jpeg_header(640, 480), ("image/jpeg", 640, 480)),
        (gif_header(10, 20), ("image/gif", 10, 20)),
        (webp_header(300, 200), ("image/webp", 300, 200)),
    ],
)
def test_each_format_is_known_by_its_magic_number_with_its_size(data: bytes, expected: tuple[str, int, int]) -> None:
    """PNG, JPEG, GIF and WebP are recognised and their pixel size read from the header."""
    assert sniff_image(data) == expected


@pytest.mark.parametrize("data", [b"", b"hello", b"%PDF-1.7", b"\x89PNX\r\n", b"RIFF\x00\x00\x00\x00WAVE"])
def test_anything_else_is_not_an_image(data: bytes) -> None:
    """Bytes of another format (or none) raise `UsageError` with code ``not_an_image``."""
    with pytest.raises(UsageError) as caught:
        sniff_image(data)
    assert caught.value.code == "not_an_image"


def test_a_truncated_header_gives_the_type_without_a_size() -> None:
    """A PNG cut right after its signature is still a PNG; its size is unknown."""
    assert sniff_image(png()[:12]) == ("image/png", None, None)


def test_a_reference_round_trips_through_event_json_without_its_bytes() -> None:
    """``images`` in event data holds hash, type, size and dimensions, never the bytes, and passes validation."""
    ref = image_ref_of(png(4, 3))
    data = images_to_json((ref,))
    assert set(data[0]) == {"sha256", "media_type", "bytes", "width", "height"}
    validate_event(make_event("user/message", {"content": "look", "images": data}))
    back = images_from_json(data)
    assert back == (ref,) and back[0].data is None


def test_a_bad_images_field_is_refused_by_the_schema() -> None:
    """An image entry without its sha256 does not fit the ``user/message`` schema."""
    from stellate.errors import FormatError

    with pytest.raises(FormatError, match="images.0.sha256"):
        validate_event(
            make_event("user/message", {"content": "x", "images": [{"media_type": "image/png", "bytes": 1}]})
        )


def test_messages_keep_their_images_through_json() -> None:
    """`message_to_json` writes the references and `message_from_json` reads them back."""
    message = UserMessage(content="look", images=(image_ref_of(png()),))
    assert message_from_json(message_to_json(message)) == message
    assert "images" not in message_to_json(UserMessage(content="plain"))
