"""rubrictools.images: images from bytes, files, URLs, data URIs and content parts; digests, never bytes."""

from __future__ import annotations

import base64
import hashlib

import pytest

from rubrictools.conversations import as_conversation
from rubrictools.images import as_image, as_images, describe, image_sha256

PNG = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 40
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 40


def test_bytes_files_uris_and_parts_become_the_same_image(tmp_path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(PNG)
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    images = [
        as_image(PNG, source="s"),
        as_image(str(path), source="s"),
        as_image(path, source="s"),
        as_image(uri, source="s"),
        as_image({"type": "image_url", "image_url": {"url": uri}}, source="s"),
    ]
    assert {i.url for i in images} == {uri} and {i.sha256 for i in images} == {hashlib.sha256(PNG).hexdigest()}
    assert as_image(JPEG, source="s").media_type == "image/jpeg" and image_sha256(uri) == images[0].sha256
    remote = as_image("https://example.org/cat.png", source="s")
    assert remote.url == "https://example.org/cat.png" and remote.nbytes is None
    assert "sha256" in describe(images[0]) and base64.b64encode(PNG).decode() not in repr(images[0])
    assert as_images(None, source="s") == () and len(as_images([PNG, None, JPEG], source="s")) == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"GIF", "not a PNG, JPEG, GIF or WebP"),
        ("no/such/file.png", "not an image file, an http"),
        ("data:text/plain;base64,aGk=", "data URI image must be"),
        ("data:image/png;base64,***", "does not decode"),
        ({"type": "image_url"}, "needs an 'image_url'"),
        (3, "cannot read an image from a int"),
    ],
)
def test_bad_images_are_refused_naming_where(value, message) -> None:
    with pytest.raises(ValueError, match=message) as e:
        as_image(value, source="column 'photo'")
    assert "column 'photo'" in str(e.value)


def test_a_conversation_keeps_its_images_numbered_and_says_what_it_cannot_show() -> None:
    conv = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/1.png"}},
            ],
        },
        {"role": "assistant", "content": "A cat."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "https://x/2.png"}},
                {"type": "text", "text": "And this?"},
            ],
        },
    ]
    turns = as_conversation(conv)
    assert turns[0].content == "What is this?\n[image 1]" and turns[2].content == "[image 2]\nAnd this?"
    assert [i.source for t in turns for i in t.images] == ["turn 1, user", "turn 3, user"]
    with pytest.warns(UserWarning, match="input_audio content part cannot be shown"):
        audio = as_conversation([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])
    assert audio[0].content == "[input_audio part: not shown to the judge]"
    with pytest.raises(ValueError, match=r"turn 0: .*turn 1, user.*not an image file"):
        as_conversation([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "nope.png"}}]}])


def _uri(kind: str, data: bytes) -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            _uri("image/tiff", b"II*\x00" + b"\x00" * 40),
            r"\(declared image/tiff\) that are not a PNG, JPEG, GIF or WebP",
        ),
        (_uri("image/png", b"plain text, not an image"), "not a PNG, JPEG, GIF or WebP image"),
        (_uri("image/jpeg", PNG), "the data URI says image/jpeg but its bytes are image/png"),
    ],
)
def test_a_data_uri_is_checked_as_bytes_are(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        as_image(value, source="column 'photo'")


def test_an_image_too_large_for_providers_is_refused_from_every_source(tmp_path) -> None:
    from rubrictools.images import MAX_IMAGE_BYTES

    big = PNG + b"\x00" * MAX_IMAGE_BYTES
    path = tmp_path / "big.png"
    path.write_bytes(big)
    for value in (big, str(path), _uri("image/png", big)):
        with pytest.raises(
            ValueError, match=r"column 'photo': a 20\.0 MB image; providers refuse images over about 20"
        ):
            as_image(value, source="column 'photo'")
    assert as_image(PNG + b"\x00" * (MAX_IMAGE_BYTES - len(PNG)), source="x").nbytes == MAX_IMAGE_BYTES
