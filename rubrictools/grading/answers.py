"""Answers kept in the response cache, and how a cached or batch answer is applied to a call.

One implementation serves live grading, provider batch jobs and their retries: a cached
answer is re-parsed by the call's own task, so a stale or foreign entry is asked again, never
trusted.
"""

from __future__ import annotations

import json

from rubrictools.judge import CachedResponse, Call, CallResult, apply_answer
from rubrictools.judge.result import REPLY_DETAILS

__all__ = ["apply_result", "cache_entry", "from_cache", "logprob_distribution"]


DETAILS = REPLY_DETAILS  # kept beside the answer in the cache when the provider sent them


def _extra(call: Call) -> str | None:
    """What is kept beside a call's answer in the cache: its distribution (when wanted), its
    reasoning trace and token details (when sent); None when there is nothing."""
    extra: dict[str, object] = {k: getattr(call, k) for k in DETAILS if getattr(call, k) is not None}
    if call.wants_distribution:
        extra |= {"distribution": call.dist, "source": call.dist_source}
    return json.dumps(extra) if extra else None


def cache_entry(call: Call) -> CachedResponse:
    """The cache entry of an answered call."""
    return CachedResponse(call.content or "", call.prompt_tokens, call.completion_tokens, call.cost_usd, _extra(call))


def from_cache(call: Call, hit: CachedResponse) -> bool:
    """Answer ``call`` from a cache entry. False, leaving ``call`` unanswered, when the entry
    does not parse (stale or foreign) or lacks the distribution the call asks for."""
    try:
        stored = json.loads(hit.extra) if hit.extra else {}
    except ValueError:
        stored = {}
    stored = stored if isinstance(stored, dict) else {}
    if call.wants_distribution:
        if "source" not in stored:
            return False
        call.dist, call.dist_source = stored.get("distribution"), stored["source"]
    if apply_answer(call, hit.content):
        for k in DETAILS:
            setattr(call, k, stored.get(k))
        call.cached, call.attempts = True, 0
        call.prompt_tokens, call.completion_tokens, call.cost_usd = (
            hit.prompt_tokens,
            hit.completion_tokens,
            hit.cost_usd,
        )
        return True
    call.content, call.parsed, call.error, call.dist, call.dist_source = None, None, None, None, None
    return False


def logprob_distribution(call: Call, res: CallResult) -> None:
    """Set ``call``'s distribution from ``res``'s logprobs (``unavailable`` when they cannot say)."""
    dist = call.task.distribution_from_logprobs(res.content, res.logprobs)
    call.dist, call.dist_source = (dist, "logprobs") if dist is not None else (None, "unavailable")


def apply_result(call: Call, res: CallResult, *, paid: bool) -> bool:
    """Apply a batch line's answer to ``call``; ``paid=False`` marks a duplicate request's
    second use (answered once, counted as cached). True when the answer is fully valid."""
    call.content, call.prompt_tokens, call.completion_tokens, call.cost_usd = (
        res.content,
        res.prompt_tokens,
        res.completion_tokens,
        res.cost_usd,
    )
    for k in DETAILS:
        setattr(call, k, getattr(res, k))
    call.cached = not paid
    call.attempts, call.latency_s = (1 if paid else 0), None  # a batch line has no latency of its own
    ok = apply_answer(call, res.content)
    if ok and call.wants_distribution:
        logprob_distribution(call, res)
    return ok
