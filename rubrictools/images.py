"""Images a judge is shown: from bytes, a file, a URL, a data URI or an OpenAI content part.

An :class:`Image` is what a request carries (``url``: an ``http(s)`` URL or a ``data:`` URI,
as OpenAI's ``image_url`` part takes it) with the SHA-256 of its bytes, which cache keys use
instead of the bytes. Where it came from (``source``: "turn 2 (user)", "column 'photo'") labels
it in the prompt, so the judge knows which image belongs to which part.

>>> png = bytes.fromhex("89504e470d0a1a0a") + b"rest of a PNG"
>>> img = as_image(png, source="column 'photo'")
>>> img.media_type, img.url[:22], len(img.sha256)
('image/png', 'data:image/png;base64,', 64)
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_IMAGE_BYTES", "Image", "as_image", "as_images", "describe", "image_sha256", "is_image_part"]

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_IMAGE_PART_TYPES = ("image_url", "input_image")


@dataclass(frozen=True)
class Image:
    """One image as sent: ``url`` (``http(s)`` or ``data:``), its media type when known, the
    SHA-256 of its bytes (of the URL text for a remote image) and its size in bytes when known."""

    url: str
    sha256: str
    media_type: str | None = None
    nbytes: int | None = None
    source: str = ""

    def part(self) -> dict[str, Any]:
        """The OpenAI ``image_url`` content part that carries it."""
        return {"type": "image_url", "image_url": {"url": self.url}}

    def __repr__(self) -> str:
        return f"Image({describe(self)})"


def describe(img: Image) -> str:
    """A short human description: type, size and hash prefix (never the bytes).

    >>> describe(Image("https://x/y.png", "ab" * 32))
    'https://x/y.png, sha256 abababababab'
    """
    what = img.media_type or (img.url if not img.url.startswith("data:") else "image")
    size = f", {img.nbytes / 1024:.1f} KB" if img.nbytes is not None else ""
    return f"{what}{size}, sha256 {img.sha256[:12]}"


def _sniff(data: bytes) -> str | None:
    for sig, kind in _SIGNATURES:
        if data.startswith(sig):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest image sent (providers refuse images over about 20 MB; base64 adds a third)."""


def _checked(data: bytes, source: str, declared: str | None = None) -> str:
    """The media type of image bytes, checked the same way whatever their source: a PNG, JPEG,
    GIF or WebP (by their first bytes, not their name), at most :data:`MAX_IMAGE_BYTES`, and
    what a ``data:`` URI declares them to be."""
    kind = _sniff(data)
    if kind is None:
        said = f" (declared {declared})" if declared else ""
        raise ValueError(f"{source}: {len(data)} bytes{said} that are not a PNG, JPEG, GIF or WebP image")
    if declared is not None and declared != kind:
        raise ValueError(f"{source}: the data URI says {declared} but its bytes are {kind}")
    if len(data) > MAX_IMAGE_BYTES:
        mb = len(data) / 1024 / 1024
        raise ValueError(f"{source}: a {mb:.1f} MB image; providers refuse images over about 20 MB: shrink it first")
    return kind


def _from_bytes(data: bytes, source: str) -> Image:
    kind = _checked(data, source)
    url = f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
    return Image(url, hashlib.sha256(data).hexdigest(), kind, len(data), source)


@functools.lru_cache(maxsize=4096)
def image_sha256(url: str) -> str:
    """SHA-256 of the image bytes of a ``data:`` URI (of the text of any other URL); memoised,
    so a request's cache key costs one lookup per image."""
    if url.startswith("data:") and ";base64," in url:
        try:
            return hashlib.sha256(base64.b64decode(url.partition(";base64,")[2], validate=True)).hexdigest()
        except (binascii.Error, ValueError):
            pass
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def _from_text(text: str, source: str) -> Image:
    if text.startswith("data:"):
        head, sep, payload = text.partition(",")
        if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
            raise ValueError(f"{source}: a data URI image must be 'data:image/<type>;base64,...'")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{source}: the data URI's base64 payload does not decode") from None
        kind = _checked(data, source, declared=head[5:].removesuffix(";base64").lower())
        return Image(text, hashlib.sha256(data).hexdigest(), kind, len(data), source)
    if text.startswith(("http://", "https://")):
        return Image(text, image_sha256(text), None, None, source)
    path = Path(text).expanduser()
    if not path.is_file():
        raise ValueError(f"{source}: {text[:80]!r} is not an image file, an http(s) URL or a data URI")
    return _from_bytes(path.read_bytes(), source)


def is_image_part(part: Any) -> bool:
    """True for an OpenAI image content part (``{"type": "image_url", ...}``)."""
    return isinstance(part, Mapping) and part.get("type") in _IMAGE_PART_TYPES


def as_image(value: Any, *, source: str) -> Image:
    """An :class:`Image` from PNG/JPEG/GIF/WebP bytes, a file path, an ``http(s)`` URL, a
    ``data:`` URI or an OpenAI image content part; errors name ``source``."""
    if isinstance(value, Image):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _from_bytes(bytes(value), source)
    if isinstance(value, Path):
        return _from_text(str(value), source)
    if isinstance(value, str):
        return _from_text(value.strip(), source)
    if isinstance(value, Mapping):
        inner = value.get("image_url", value.get("url"))
        if isinstance(inner, Mapping):
            inner = inner.get("url")
        if isinstance(inner, str):
            return _from_text(inner.strip(), source)
        raise ValueError(f"{source}: an image part needs an 'image_url' with a 'url'")
    raise ValueError(f"{source}: cannot read an image from a {type(value).__name__}")


def as_images(value: Any, *, source: str) -> tuple[Image, ...]:
    """The images of one cell: none (null), one, or a list of them."""
    if value is None:
        return ()
    if hasattr(value, "to_list") and not isinstance(value, (bytes, str)):
        value = value.to_list()
    if isinstance(value, (list, tuple)):
        return tuple(as_image(v, source=f"{source}, image {k + 1}") for k, v in enumerate(value) if v is not None)
    return (as_image(value, source=source),)
