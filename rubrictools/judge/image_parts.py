"""Images in a request: the submission's images as content parts after the submission and
before the criteria (so they are part of the prefix requests about one submission share),
each labelled with where it came from; and the text of a message whatever its content form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubrictools.images import Image, as_image, describe, image_sha256, is_image_part
from rubrictools.judge.prompts import shared_prefix

__all__ = ["content_text", "has_remote_image", "request_images", "with_images"]


def with_images(messages: list[dict[str, Any]], images: Sequence[Image]) -> list[dict[str, Any]]:
    """``messages`` with ``images`` placed in the last (user) message as OpenAI content parts:
    the text up to the end of the shared part (:func:`~rubrictools.judge.prompts.shared_prefix`),
    then for each image a text label ("Image 2 of the submission (turn 3, user):") and the
    image, then the rest of the text (the criteria); after all the text when it has no shared
    part. Without images, ``messages`` unchanged.

    >>> from rubrictools.images import Image
    >>> photo = Image("https://x/a.png", "0" * 64, source="column 'photo'")
    >>> msgs = with_images([{"role": "user", "content": "Grade it."}], [photo])
    >>> [p["type"] for p in msgs[0]["content"]], msgs[0]["content"][1]["text"]
    (['text', 'text', 'image_url'], "Image 1 of the submission (column 'photo'):")
    """
    if not images:
        return messages
    *head, last = messages
    text = str(last["content"])
    cut = shared_prefix(text)
    before, after = (text, "") if cut is None else (text[:cut], text[cut:].lstrip("\n"))
    parts: list[dict[str, Any]] = [{"type": "text", "text": before}]
    for k, img in enumerate(images, 1):
        where = f" ({img.source})" if img.source else ""
        parts += [{"type": "text", "text": f"Image {k} of the submission{where}:"}, img.part()]
    if after:
        parts.append({"type": "text", "text": after})
    return [*head, {**last, "content": parts}]


def content_text(content: Any) -> str:
    """A message's content as text: a string as is; content parts joined, each image shown as
    ``[image: type, size, sha256 ...]`` (never its bytes)."""
    if content is None or isinstance(content, str):
        return content or ""
    out = []
    for part in content:
        if is_image_part(part):
            out.append(f"[image: {describe(as_image(part, source='a request'))}]")
        else:
            out.append(str(part.get("text", "")) if isinstance(part, dict) else str(part))
    return "\n".join(out)


def request_images(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The SHA-256 of every image the messages carry, in order."""
    return [
        image_sha256(p["image_url"]["url"])
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if is_image_part(p) and isinstance(p.get("image_url"), dict)
    ]


def has_remote_image(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether an image of the messages is a remote URL (a token count must not fetch it:
    litellm's ``use_default_image_token_count``)."""
    return any(
        isinstance(m.get("content"), list)
        and any(
            is_image_part(p) and not str((p.get("image_url") or {}).get("url", "")).startswith("data:")
            for p in m["content"]
        )
        for m in messages
    )
