"""Batch answers -> calls: every call gets its batch answer, a cached one, or an explicit error."""

from __future__ import annotations

import hashlib
from typing import Any

from rubrictools.grading.answers import apply_result, from_cache
from rubrictools.grading.batch.files import TERMINAL
from rubrictools.grading.plan import Plan
from rubrictools.judge import CachedResponse, CallResult

__all__ = ["fill_calls", "plan_digest"]


def fill_calls(
    plan: Plan, results: dict[str, CallResult], cached: dict[str, CachedResponse], where: dict[str, dict[str, Any]]
) -> None:
    """Set every call's answer or explicit error from batch results and the cache."""
    paid: set[str] = set()
    for c in plan.calls:
        if c.key is None:  # a scripted judge: cannot happen in a batch job
            c.error = "internal: call without a key"
            continue
        res = results.get(c.key)
        if res is not None and res.error is None:
            # identical requests were sent once: the first row pays, the others count as cached
            apply_result(c, res, paid=c.key not in paid)
            paid.add(c.key)
            continue
        hit = cached.get(c.key)
        if hit is not None and from_cache(c, hit):  # answered before this job (or by a live retry)
            continue
        if res is not None:
            c.error = res.error
        elif c.key in where and where[c.key]["status"] not in TERMINAL:
            r = where[c.key]
            c.error = f"pending: batch {r['batch_id']} is {r['status']}"
        elif c.key in where:
            r = where[c.key]
            c.error = f"batch {r['batch_id']} ended {r['status']} without a result for this request"
        else:
            c.error = "not answered: not in any batch of this job (cache cleared?); resubmit() or retry()"
        c.attempts = 0


def plan_digest(plan: Plan) -> str:
    h = hashlib.sha256()
    for c in plan.calls:
        h.update((c.key or "-").encode())
        h.update(b"\0")
    return h.hexdigest()
