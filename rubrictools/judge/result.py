"""What one logical judge call produced, over however many HTTP attempts it took."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ERROR_KINDS", "REPLY_DETAILS", "USAGE_FIELDS", "CallResult", "usage_details"]

ERROR_KINDS: dict[str, str] = {
    "provider": "the provider or server failed: HTTP errors, timeouts, rate limits past the retries",
    "parse": "the judge answered, but not in a form that could be read (after the corrective turns)",
    "empty_reply": "the model returned nothing (0 tokens: often a chat template that does not fit it)",
    "budget": "not sent: max_cost_usd was spent",
    "cancelled": "not sent: the run was interrupted",
    "cache_unwritable": "not sent: the response cache could not be written (a full disk, a read-only file), so its "
    "answer could not be kept for a re-run",
    "input": "not sent: the row cannot be graded (a null submission, a conversation with no turn to grade)",
    "internal": "a bug in rubrictools (please report it)",
    "ensemble": "every judge of the ensemble failed on this criterion (see their rows)",
    "constraint": "the judge answered, but its reply breaks a hard output constraint (reply in raw_response)",
}
"""The ``error_kind`` of an error row: infrastructure (``provider``, ``budget``,
``cancelled``, ``internal``) apart from the judge's answer (``parse``, ``empty_reply``) and
from the data (``input``), as autorubric separates them."""

USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
REPLY_DETAILS = (
    "reasoning",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)  # what usage_details reads from a reply


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def usage_details(message: Any, usage: Any) -> dict[str, Any]:
    """The reasoning trace and token details of an OpenAI-format reply (a dict, or litellm's
    objects): ``message.reasoning_content`` (or ``reasoning``, as some servers name it),
    ``usage.prompt_tokens_details.cached_tokens`` (Anthropic's ``cache_read_input_tokens``),
    Anthropic's ``cache_creation_input_tokens`` (prompt tokens written to its cache, billed
    above the input price) and ``usage.completion_tokens_details.reasoning_tokens``; missing
    ones are None.

    >>> usage_details({"reasoning_content": "hm"}, {"completion_tokens_details": {"reasoning_tokens": 7}})
    {'reasoning': 'hm', 'cached_tokens': None, 'cache_write_tokens': None, 'reasoning_tokens': 7}
    >>> usage_details({}, {"cache_read_input_tokens": 900, "cache_creation_input_tokens": 120})["cache_write_tokens"]
    120
    """
    reasoning = _get(message, "reasoning_content") or _get(message, "reasoning")
    cached = _get(_get(usage, "prompt_tokens_details"), "cached_tokens")
    if not isinstance(cached, int):
        cached = _get(usage, "cache_read_input_tokens")
    written = _get(usage, "cache_creation_input_tokens")
    thought = _get(_get(usage, "completion_tokens_details"), "reasoning_tokens")
    return {
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "cached_tokens": cached if isinstance(cached, int) else None,
        "cache_write_tokens": written if isinstance(written, int) else None,
        "reasoning_tokens": thought if isinstance(thought, int) else None,
    }


@dataclass(slots=True)
class CallResult:
    """What one logical call produced (possibly after several HTTP attempts)."""

    content: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    attempts: int = 0
    latency_s: float | None = 0.0  # None: not measured (a batch line answers hours later, in bulk)
    error: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    choices: list[str | None] | None = None
    uncharged: int = 0  # of ``attempts``, how many max_retries does not count (429s; timeouts in our own queue)
    finish_reason: str | None = None  # "length": the reply was cut off at max_tokens
    reasoning: str | None = None  # the reply's reasoning trace (reasoning_content), when the provider sends one
    cached_tokens: int | None = None  # of prompt_tokens, served from the provider's prompt cache
    cache_write_tokens: int | None = None  # prompt tokens written to the provider's cache (Anthropic)
    error_kind: str | None = None  # what failed, when error is set (see rubrictools.judge.ERROR_KINDS)
    reasoning_tokens: int | None = None  # of completion_tokens, spent on reasoning

    def add_usage(self, other: CallResult) -> None:
        """Add ``other``'s HTTP attempts, tokens and cost to this result (a retried call pays for each try)."""
        self.attempts += other.attempts
        self.latency_s = (self.latency_s or 0.0) + (other.latency_s or 0.0)
        for attr in USAGE_FIELDS:
            val = getattr(other, attr)
            if val is not None:
                setattr(self, attr, (getattr(self, attr) or 0) + val)
