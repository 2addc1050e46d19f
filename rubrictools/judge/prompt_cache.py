"""Providers' prompt caches: where a request's shared prefix ends, marked for Anthropic.

Requests are laid out so that everything the requests about one submission share comes first
(:mod:`rubrictools.judge.prompts`). OpenAI and Gemini cache such a prefix by themselves. Anthropic
caches only up to a ``cache_control`` breakpoint, and bills a cache write at 1.25x the input
price and a read at 0.1x: the end of the shared part is marked when it is long enough to be
cached (Anthropic's minimum is 1,024 tokens for most models; shorter prefixes are not cached, and
a mark on them would cost nothing, but a request that cannot be cached is left as it is).
"""

from __future__ import annotations

from typing import Any

from rubrictools.judge.image_parts import content_text
from rubrictools.judge.prompts import shared_prefix

__all__ = ["MIN_CACHED_TOKENS", "cacheable_prefix", "marks_cache", "with_cache_mark"]

MIN_CACHED_TOKENS = 1024
"""The shortest prefix (in tokens, estimated at four characters a token) worth a cache mark."""

_EPHEMERAL = {"type": "ephemeral"}


def marks_cache(model: str) -> bool:
    """Whether requests to ``model`` carry a ``cache_control`` mark: Anthropic's Claude models,
    direct or through Bedrock or Vertex AI (OpenAI and Gemini cache prefixes without one).

    >>> marks_cache("anthropic/claude-sonnet-4-5"), marks_cache("openai/gpt-4.1-mini")
    (True, False)
    """
    provider, _, name = model.partition("/")
    return provider == "anthropic" or (provider in ("bedrock", "vertex_ai") and "claude" in name)


def _text_cut(text: str) -> int | None:
    """Where a text user message's shared part ends, when it is long enough to be cached."""
    cut = shared_prefix(text)
    return None if cut is None or cut < 4 * MIN_CACHED_TOKENS else cut


def _parts_cut(parts: list[dict[str, Any]]) -> int | None:
    """How many leading parts are shared, for parts laid out as text, images, text (the
    criteria; :func:`~rubrictools.judge.image_parts.with_images`): all but the last, when
    they are long enough to be cached (an image counts for ~1,000 tokens or more)."""
    images = [i for i, p in enumerate(parts) if p.get("type") == "image_url"]
    if not images or images[-1] != len(parts) - 2:
        return None
    shared_chars = sum(len(p.get("text", "")) for p in parts[:-1] if p.get("type") == "text")
    return len(parts) - 1 if shared_chars / 4 + 1000 * len(images) >= MIN_CACHED_TOKENS else None


def cacheable_prefix(content: Any) -> str | None:
    """The part of a user message's ``content`` that the requests about one submission share,
    as text (an image as its description, with its hash), when it is long enough to be cached;
    None otherwise. What the scheduler groups calls by and what the cache mark closes.

    >>> text = "<submission>\\n" + "x" * 5000 + "\\n</submission>\\n\\nGrade the submission.\\n\\nCriterion name: a"
    >>> cacheable_prefix(text).endswith("Grade the submission."), cacheable_prefix("short")
    (True, None)
    """
    if isinstance(content, str):
        cut = _text_cut(content)
        return None if cut is None else content[:cut]
    parts = list(content or [])
    n = _parts_cut(parts)
    return None if n is None else content_text(parts[:n])


def _marked_text(text: str) -> list[dict[str, Any]] | None:
    cut = _text_cut(text)
    if cut is None:
        return None
    return [
        {"type": "text", "text": text[:cut], "cache_control": _EPHEMERAL},
        {"type": "text", "text": text[cut:].lstrip("\n")},
    ]


def _marked_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Parts laid out as text, images, text (criteria): the mark goes on the last image."""
    n = _parts_cut(parts)
    if n is None:
        return None
    out = [dict(p) for p in parts]
    out[n - 1]["cache_control"] = _EPHEMERAL
    return out


def with_cache_mark(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with the end of the last user message's shared part marked ``cache_control``
    (its content then given as parts); unchanged when it has no shared part long enough.

    >>> text = "<submission>\\n" + "x" * 5000 + "\\n</submission>\\n\\nGrade the submission.\\n\\nCriterion name: a"
    >>> marked = with_cache_mark([{"role": "user", "content": text}])
    >>> [("cache_control" in p) for p in marked[0]["content"]], marked[0]["content"][1]["text"]
    ([True, False], 'Criterion name: a')
    """
    if not messages or messages[-1].get("role") != "user":
        return messages
    *head, last = messages
    content = last.get("content")
    marked = _marked_text(content) if isinstance(content, str) else _marked_parts(list(content or []))
    return messages if marked is None else [*head, {**last, "content": marked}]
