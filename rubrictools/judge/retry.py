"""Bounded retries: which failures are worth another attempt, and how long to wait for it.

At most ``max_attempts`` HTTP requests per call; 429, 5xx, timeouts and connection errors are
retried with exponential backoff and full jitter, honouring ``Retry-After``; any other error
ends the call at once. Error text never carries the judge's API key.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from email.utils import parsedate_to_datetime

from rubrictools.judge.config import Judge
from rubrictools.judge.result import CallResult
from rubrictools.judge.throttle import Throttle

__all__ = [
    "AUTH_ERRORS",
    "RETRYABLE_ERRORS",
    "Sender",
    "backoff_delay",
    "env_secrets",
    "is_auth_error",
    "is_retryable",
    "is_timeout",
    "retry_after",
    "scrub",
    "scrub_secrets",
    "timeout_note",
    "with_retries",
]

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
    "JSONDecodeError",  # a garbled 200 body: the next attempt usually gets a whole one
}
AUTH_ERRORS = {"AuthenticationError", "PermissionDeniedError"}
TIMEOUT_ERRORS = {"Timeout", "APITimeoutError", "TimeoutError"}
_AUTH_PHRASES = ("missing credentials", "incorrect api key", "invalid api key", "no api key", "api_key client option")
_SECRET_NAME = re.compile(r"(API_KEY|APIKEY|_TOKEN|_SECRET|_PASSWORD|ACCESS_KEY)$", re.I)


Sender = Callable[[], Awaitable[CallResult]]
"""One HTTP request of a call, its answer as a CallResult (attempts and latency unset)."""


def env_secrets() -> list[str]:
    """Values of environment variables that hold credentials (``*_API_KEY``, ``*_TOKEN``, ...):
    every key a call could have used without being given one."""
    return [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8]


def scrub_secrets(text: str, keys: Iterable[str] = ()) -> str:
    """``text`` with every credential (``keys`` and those in the environment) replaced by ``***``."""
    for secret in sorted({*keys, *env_secrets()}, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return text


def scrub(text: str, judge: Judge) -> str:
    """Remove the judge's API key, and any key in the environment, from ``text`` (error
    messages can echo request data, and a provider may echo the key it was sent)."""
    key = judge.api_key.get_secret_value() if judge.api_key is not None else ""
    return scrub_secrets(text, [key] if key else [])


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
    except Exception:  # noqa: BLE001  # a malformed Retry-After header of any kind is ignored (the backoff schedule applies)
        return None


def is_auth_error(exc: BaseException) -> bool:
    """A missing, wrong or unauthorised key: another attempt cannot succeed."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & AUTH_ERRORS or getattr(exc, "status_code", None) in (401, 403):
        return True
    text = str(exc).lower()
    return any(p in text for p in _AUTH_PHRASES)


def is_retryable(exc: BaseException) -> bool:
    if is_auth_error(exc):
        return False
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


def is_rate_limit(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    return "RateLimitError" in names or getattr(exc, "status_code", None) == 429


def is_timeout(exc: BaseException) -> bool:
    """No answer within the judge's ``timeout`` (either transport)."""
    return bool({c.__name__ for c in type(exc).__mro__} & TIMEOUT_ERRORS)


def timeout_note(judge: Judge, others: int, *, adaptive: bool = False) -> str:
    """What a timeout measured: the server alone, or also the wait behind our other requests.

    >>> timeout_note(Judge(model="openai/x"), 0)
    ' (sent alone: the server took longer than timeout=120 s, perhaps still busy with requests given up on)'
    """
    if others < 1:
        return (
            f" (sent alone: the server took longer than timeout={judge.timeout:g} s, "
            "perhaps still busy with requests given up on)"
        )
    why = (
        f" (sent while {others} other request(s) of this judge were in flight: a server that answers fewer at once "
        "queues them, and the wait counts against the timeout; "
    )
    if adaptive:
        return why + "the judge lowered its concurrency, but not enough: lower max_concurrency= or raise timeout=)"
    return why + "set max_concurrency= to the server's slots, raise timeout=, or keep adaptive_concurrency=True)"


async def with_retries(judge: Judge, max_attempts: int, send: Sender, throttle: Throttle | None = None) -> CallResult:
    """At most ``max_attempts`` calls of ``send`` for errors; retryable failures back off (full
    jitter, ``Retry-After`` honoured), any other failure ends the call with an error.

    With a shared ``throttle``, a 429 closes the judge's gate for everyone instead of this call
    sleeping alone, and a timeout of a request sent while others of the judge were in flight
    lowers the judge's concurrency (the wait was in a queue we filled). Such attempts draw on
    their own allowance of ``judge.max_rate_limit_retries`` rather than on ``max_attempts``: a
    provider-wide storm or an overfilled local server then delays calls instead of failing them.
    An authentication failure stops the throttle: the judge's later requests are not sent and
    end with an error saying why.
    """
    attempts = free = 0
    spent = 0.0  # seconds the server had our requests (each attempt from sent to answer or failure)
    last_error = "no attempt made"
    while attempts - free < max_attempts:
        others = 0
        if throttle is not None:
            others = await throttle.acquire()
            if throttle.stopped is not None:
                await throttle.release(ok=False)
                return CallResult(None, None, None, None, attempts, spent, throttle.stopped)
        attempts += 1
        ok = False
        sent = time.monotonic()
        ended: float | None = None  # before any backoff below: a backoff is not the server's time
        try:
            res = await send()
            ended = time.monotonic()
            ok = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001  # every failure of an HTTP attempt is classified (retryable or not) and recorded, key scrubbed
            ended = time.monotonic()
            last_error = scrub(f"{type(exc).__name__}: {exc}", judge)[:500]
            if throttle is not None and free < judge.max_rate_limit_retries:
                if judge.shared_backoff and is_rate_limit(exc):
                    free += 1
                    throttle.rate_limited(backoff_delay(judge, exc, free))
                    continue
                if is_timeout(exc) and throttle.timed_out(others):
                    free += 1
                    continue
            if is_timeout(exc):
                last_error += timeout_note(judge, others, adaptive=throttle is not None and throttle.adaptive)
            if is_auth_error(exc):
                if throttle is not None:
                    throttle.stop(f"not sent: an earlier request of this judge failed authentication ({last_error})")
                break
            if not is_retryable(exc) or attempts - free >= max_attempts:
                break
            await asyncio.sleep(backoff_delay(judge, exc, attempts - free))
            continue
        finally:
            took = (ended if ended is not None else time.monotonic()) - sent
            spent += took
            if throttle is not None:
                await throttle.release(ok=ok, latency=took if ok else None)
        # latency: the requests' own time, never the wait for a slot of ours or a backoff
        res.attempts, res.uncharged, res.latency_s = attempts, free, spent
        return res
    return CallResult(None, None, None, None, attempts, spent, last_error, uncharged=free)
