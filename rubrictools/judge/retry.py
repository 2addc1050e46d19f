"""Bounded retries: which failures are worth another attempt, and how long to wait for it.

At most ``max_attempts`` HTTP requests per call; 429, 5xx, timeouts and connection errors are
retried with exponential backoff and full jitter, honouring ``Retry-After``; any other error
ends the call at once. Error text never carries the judge's API key.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime

from rubrictools.judge.config import Judge
from rubrictools.judge.result import CallResult

__all__ = ["RETRYABLE_ERRORS", "Sender", "backoff_delay", "is_retryable", "retry_after", "scrub", "with_retries"]

RETRYABLE_ERRORS = {
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "Timeout",
    "APITimeoutError",
    "APIConnectionError",
    "TimeoutError",  # direct transport: no answer within the timeout
    "ClientConnectionError",  # direct transport (aiohttp): refused, reset, disconnected
    "ClientPayloadError",
}


Sender = Callable[[], Awaitable[CallResult]]
"""One HTTP request of a call, its answer as a CallResult (attempts and latency unset)."""


def scrub(text: str, judge: Judge) -> str:
    """Remove the judge's API key from ``text`` (error messages can echo request data)."""
    if judge.api_key is not None:
        secret = judge.api_key.get_secret_value()
        if secret:
            text = text.replace(secret, "***")
    return text


def retry_after(exc: BaseException) -> float | None:
    headers = None
    for candidate in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if candidate:
            headers = candidate
            break
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            return max(0.0, parsedate_to_datetime(ra).timestamp() - time.time())
    except Exception:
        return None


def is_retryable(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    if names & RETRYABLE_ERRORS:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def backoff_delay(judge: Judge, exc: BaseException, attempts: int) -> float:
    """Seconds to wait before retry number ``attempts``: the server's ``Retry-After``, else
    exponential backoff with full jitter; never more than twice ``backoff_max``."""
    wait = retry_after(exc)
    if wait is None:
        wait = random.uniform(0, min(judge.backoff_max, judge.backoff_base * 2 ** (attempts - 1)))
    return min(wait, max(judge.backoff_max, 0.0) * 2)


async def with_retries(judge: Judge, max_attempts: int, send: Sender) -> CallResult:
    """At most ``max_attempts`` calls of ``send``; retryable failures back off (full jitter,
    ``Retry-After`` honoured), any other failure ends the call with an error."""
    t0 = time.perf_counter()
    attempts = 0
    last_error = "no attempt made"
    while attempts < max_attempts:
        attempts += 1
        try:
            res = await send()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            last_error = scrub(f"{type(exc).__name__}: {exc}", judge)[:500]
            if not is_retryable(exc) or attempts >= max_attempts:
                break
            await asyncio.sleep(backoff_delay(judge, exc, attempts))
            continue
        res.attempts, res.latency_s = attempts, time.perf_counter() - t0
        return res
    return CallResult(None, None, None, None, attempts, time.perf_counter() - t0, last_error)
