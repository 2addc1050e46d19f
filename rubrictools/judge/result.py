"""What one logical judge call produced, over however many HTTP attempts it took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["REPLY_DETAILS", "USAGE_FIELDS", "CallResult", "usage_details"]

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cost_usd", "cached_tokens", "reasoning_tokens")
REPLY_DETAILS = ("reasoning", "cached_tokens", "reasoning_tokens")  # what usage_details reads from a reply


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def usage_details(message: Any, usage: Any) -> dict[str, Any]:
    """The reasoning trace and token details of an OpenAI-format reply (a dict, or litellm's
    objects): ``message.reasoning_content`` (or ``reasoning``, as some servers name it),
    ``usage.prompt_tokens_details.cached_tokens`` and
    ``usage.completion_tokens_details.reasoning_tokens``; missing ones are None.

    >>> usage_details({"reasoning_content": "hm"}, {"completion_tokens_details": {"reasoning_tokens": 7}})
    {'reasoning': 'hm', 'cached_tokens': None, 'reasoning_tokens': 7}
    """
    reasoning = _get(message, "reasoning_content") or _get(message, "reasoning")
    cached = _get(_get(usage, "prompt_tokens_details"), "cached_tokens")
    thought = _get(_get(usage, "completion_tokens_details"), "reasoning_tokens")
    return {
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "cached_tokens": cached if isinstance(cached, int) else None,
        "reasoning_tokens": thought if isinstance(thought, int) else None,
    }


@dataclass
class CallResult:
    """What one logical call produced (possibly after several HTTP attempts)."""

    content: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    attempts: int = 0
    latency_s: float = 0.0
    error: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    choices: list[str | None] | None = None
    uncharged: int = 0  # of ``attempts``, how many max_retries does not count (429s; timeouts in our own queue)
    finish_reason: str | None = None  # "length": the reply was cut off at max_tokens
    reasoning: str | None = None  # the reply's reasoning trace (reasoning_content), when the provider sends one
    cached_tokens: int | None = None  # of prompt_tokens, served from the provider's prompt cache
    reasoning_tokens: int | None = None  # of completion_tokens, spent on reasoning

    def add_usage(self, other: CallResult) -> None:
        """Add ``other``'s HTTP attempts, tokens and cost to this result (a retried call pays for each try)."""
        self.attempts += other.attempts
        for attr in USAGE_FIELDS:
            val = getattr(other, attr)
            if val is not None:
                setattr(self, attr, (getattr(self, attr) or 0) + val)
