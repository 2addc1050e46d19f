"""The provider batch API (files + batches, through litellm): the HTTP half of batch jobs.

Every call goes through the judge's retry policy and names what failed, never the key.
The job logic (what to submit, how answers become verdicts) is in :mod:`rubrictools.grading.batch`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rubrictools.judge.config import Judge
from rubrictools.judge.distribution import normalise_logprobs
from rubrictools.judge.pricing import token_cost
from rubrictools.judge.providers import provider_of
from rubrictools.judge.result import CallResult, usage_details
from rubrictools.judge.retry import backoff_delay, is_retryable, scrub, scrub_secrets

__all__ = ["batch_call", "credentials", "job_keys", "line_result", "read_lines", "scrubbed_file"]


def job_keys(judge: Judge, api_key: str | None) -> list[str]:
    """Every key a batch request of ``judge`` may have carried: the one given to the job and the
    judge's own (a provider may echo either back in an error line)."""
    keys = [api_key] if api_key else []
    if judge.api_key is not None:
        keys.append(judge.api_key.get_secret_value())
    return keys


def scrubbed_file(content: bytes, keys: Sequence[str]) -> bytes:
    """A downloaded batch file with every key (``keys`` and the environment's) replaced by ``***``:
    a provider's error line can echo the key it was sent ("Incorrect API key provided: sk-...").

    >>> scrubbed_file(b'{"error": "Incorrect API key provided: sk-abcdefgh1234"}', ["sk-abcdefgh1234"])
    b'{"error": "Incorrect API key provided: ***"}'
    """
    text = content.decode("utf-8", errors="surrogateescape")
    clean = scrub_secrets(text, keys)
    return content if clean == text else clean.encode("utf-8", errors="surrogateescape")


def credentials(judge: Judge, api_key: str | None) -> dict[str, Any]:
    kw: dict[str, Any] = {"custom_llm_provider": provider_of(judge.model), "max_retries": 0}
    if judge.api_base is not None:
        kw["api_base"] = judge.api_base
    key = api_key if api_key is not None else (judge.api_key.get_secret_value() if judge.api_key is not None else None)
    if key is not None:
        kw["api_key"] = key
    return kw


def batch_call(judge: Judge, api_key: str | None, what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call a litellm files/batches function with the judge's retry policy (429, 5xx,
    connection errors; ``Retry-After`` honoured); errors name ``what`` and never the key."""
    attempts = 0
    while True:
        attempts += 1
        try:
            return fn(**kwargs, **credentials(judge, api_key))
        except Exception as exc:  # noqa: BLE001  # litellm's file/batch calls raise provider-specific types; retryable ones are retried, the rest re-raised scrubbed
            if not is_retryable(exc) or attempts > judge.max_retries:
                msg = scrub_secrets(scrub(f"{type(exc).__name__}: {exc}", judge), [api_key] if api_key else [])
                raise RuntimeError(f"batch API: {what} failed after {attempts} attempt(s): {msg[:500]}") from None
            time.sleep(backoff_delay(judge, exc, attempts))


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    return out


def line_result(line: dict[str, Any], prices: tuple[float, float] | None, keys: Sequence[str] = ()) -> CallResult:
    """One line of a batch output or error file as a result (answer or explicit error); an
    error never carries ``keys`` (the keys the job was given) nor a key in the environment."""
    resp = line.get("response") or {}
    err = line.get("error")
    status = resp.get("status_code")
    body = resp.get("body")
    if err and not resp:
        code = err.get("code") if isinstance(err, dict) else None
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return CallResult(error=scrub_secrets(f"batch: {code or 'error'}: {msg}", keys))
    if status != 200 or not isinstance(body, dict):
        detail = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message") or json.dumps(detail)
        return CallResult(error=scrub_secrets(f"batch line failed: HTTP {status}: {str(detail)[:300]}", keys))
    choices = body.get("choices") or []
    if not choices:
        return CallResult(error="batch line failed: the answer has no choices")
    first = choices[0]
    usage = body.get("usage") or {}
    pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
    cost = token_cost(prices, pt, ct)
    lp = normalise_logprobs(first.get("logprobs")) if first.get("logprobs") else None
    message = first.get("message") or {}
    return CallResult(message.get("content"), pt, ct, cost, logprobs=lp, **usage_details(message, usage))
