"""One judge call through litellm with bounded, honest retries."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from rubrictools.judge.config import Judge

__all__ = ["CallResult", "chat_body", "complete", "response_format_for", "scrub", "wire_model"]

_RETRYABLE_NAMES = {
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

    def add_usage(self, other: CallResult) -> None:
        """Add ``other``'s HTTP attempts, tokens and cost to this result (a retried call pays for each try)."""
        self.attempts += other.attempts
        for attr in ("prompt_tokens", "completion_tokens", "cost_usd"):
            val = getattr(other, attr)
            if val is not None:
                setattr(self, attr, (getattr(self, attr) or 0) + val)


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def scrub(text: str, judge: Judge) -> str:
    """Remove the judge's API key from ``text`` (error messages can echo request data)."""
    if judge.api_key is not None:
        secret = judge.api_key.get_secret_value()
        if secret:
            text = text.replace(secret, "***")
    return text


def response_format_for(judge: Judge, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The ``response_format`` to send: a JSON schema, JSON mode or nothing."""
    fmt = judge.response_format
    if fmt == "auto":
        try:
            fmt = "json_schema" if _litellm().supports_response_schema(model=judge.model) else "json_object"
        except Exception:
            fmt = "json_object"
    if fmt == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if fmt == "json_object":
        return {"type": "json_object"}
    return None


def _retry_after(exc: BaseException) -> float | None:
    headers = None
    for candidate in (getattr(exc, "litellm_response_headers", None), getattr(getattr(exc, "response", None), "headers", None),
                      getattr(exc, "headers", None)):
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


def _is_retryable(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    if names & _RETRYABLE_NAMES:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


async def complete(
    judge: Judge,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    *,
    max_attempts: int,
    extra: dict[str, Any] | None = None,
) -> CallResult:
    """Send ``messages`` with at most ``max_attempts`` HTTP requests.

    Retries 429, 5xx, timeouts and connection errors with exponential backoff and full
    jitter, honouring ``Retry-After``; any other error fails at once.
    """
    kwargs: dict[str, Any] = {
        "model": judge.model,
        "messages": messages,
        "temperature": judge.temperature,
        "timeout": judge.timeout,
        "num_retries": 0,
        "max_retries": 0,
        **judge.litellm_kwargs,
    }
    if judge.max_tokens is not None:
        kwargs["max_tokens"] = judge.max_tokens
    if judge.api_base is not None:
        kwargs["api_base"] = judge.api_base
    if judge.api_key is not None:
        kwargs["api_key"] = judge.api_key.get_secret_value()
    if response_format is not None:
        kwargs["response_format"] = response_format
    if extra:
        kwargs.update(extra)  # e.g. logprobs/top_logprobs, or n samples at temperature 1
    if judge.transport == "direct":
        send = _direct_sender(judge, chat_body(judge, messages, response_format, extra))
    else:
        send = _litellm_sender(judge, kwargs)
    return await _with_retries(judge, max_attempts, send)


def wire_model(model: str) -> str:
    """The model name an OpenAI-compatible endpoint expects (litellm's provider prefix removed)."""
    prefix, _, rest = model.partition("/")
    return rest if rest and prefix in _WIRE_PREFIXES else model


_WIRE_PREFIXES = {"openai", "azure", "hosted_vllm", "litellm_proxy", "text-completion-openai"}


def chat_body(
    judge: Judge,
    messages: list[dict[str, str]],
    response_format: dict[str, Any] | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The OpenAI chat-completions request body of one call (no secrets): what the direct
    transport posts and what a provider batch file holds per line."""
    body: dict[str, Any] = {"model": wire_model(judge.model), "messages": messages, "temperature": judge.temperature,
                            **judge.litellm_kwargs}  # fmt: skip
    if judge.max_tokens is not None:
        body["max_tokens"] = judge.max_tokens
    if response_format is not None:
        body["response_format"] = response_format
    if extra:
        body.update(extra)
    return body


Sender = Callable[[], Awaitable[CallResult]]


def _litellm_sender(judge: Judge, kwargs: dict[str, Any]) -> Sender:
    """One ``litellm.acompletion`` request, its answer as a CallResult (attempts and latency unset)."""
    litellm = _litellm()

    async def send() -> CallResult:
        from rubrictools.judge.distribution import normalise_logprobs

        resp = await litellm.acompletion(**kwargs)
        content = resp.choices[0].message.content if resp.choices else None
        usage = getattr(resp, "usage", None)
        try:
            cost: float | None = float(litellm.completion_cost(completion_response=resp, model=judge.model))
        except Exception:
            cost = None
        first = resp.choices[0] if resp.choices else None
        lp = normalise_logprobs(getattr(first, "logprobs", None)) if first is not None else None
        choices = [c.message.content for c in resp.choices] if resp.choices and len(resp.choices) > 1 else None
        return CallResult(content, getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
                          cost, logprobs=lp, choices=choices)  # fmt: skip

    return send


def backoff_delay(judge: Judge, exc: BaseException, attempts: int) -> float:
    """Seconds to wait before retry number ``attempts``: the server's ``Retry-After``, else
    exponential backoff with full jitter; never more than twice ``backoff_max``."""
    wait = _retry_after(exc)
    if wait is None:
        wait = random.uniform(0, min(judge.backoff_max, judge.backoff_base * 2 ** (attempts - 1)))
    return min(wait, max(judge.backoff_max, 0.0) * 2)


async def _with_retries(judge: Judge, max_attempts: int, send: Sender) -> CallResult:
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
        except Exception as exc:  # noqa: BLE001 - every failure becomes an explicit error
            last_error = scrub(f"{type(exc).__name__}: {exc}", judge)[:500]
            if not _is_retryable(exc) or attempts >= max_attempts:
                break
            await asyncio.sleep(backoff_delay(judge, exc, attempts))
            continue
        res.attempts, res.latency_s = attempts, time.perf_counter() - t0
        return res
    return CallResult(None, None, None, None, attempts, time.perf_counter() - t0, last_error)

# --------------------------------------------------------------------------- direct transport
_CLIENTS: dict[int, Any] = {}
_PRICES: dict[str, tuple[float, float] | None] = {}


class HTTPStatusError(Exception):
    """An HTTP error answer from an OpenAI-compatible endpoint (direct transport)."""

    def __init__(self, status_code: int, body: str, headers: Any) -> None:
        super().__init__(f"HTTP {status_code}: {body[:300]}")
        self.status_code = status_code
        self.headers = headers


def _http_client() -> Any:
    """One pooled aiohttp session per event loop (closed by :func:`aclose_clients`)."""
    import aiohttp

    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(id(loop))
    if client is None or client.closed:
        client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300))
        _CLIENTS[id(loop)] = client
    return client


async def aclose_clients() -> None:
    """Close the direct transport's session of the running loop (end of a grading run)."""
    client = _CLIENTS.pop(id(asyncio.get_running_loop()), None)
    if client is not None:
        await client.close()


def _unit_prices(model: str) -> tuple[float, float] | None:
    """(dollars per prompt token, per completion token) from litellm's price table, cached."""
    if model not in _PRICES:
        try:
            p, _ = _litellm().cost_per_token(model=model, prompt_tokens=1_000_000, completion_tokens=0)
            _, c = _litellm().cost_per_token(model=model, prompt_tokens=0, completion_tokens=1_000_000)
            _PRICES[model] = (float(p) / 1e6, float(c) / 1e6)
        except Exception:
            _PRICES[model] = None
    return _PRICES[model]


def _direct_sender(judge: Judge, body: dict[str, Any]) -> Sender:
    """One POST of ``body`` to ``{api_base}/chat/completions`` (OpenAI wire format) as a CallResult."""
    import aiohttp

    base = (judge.api_base or "https://api.openai.com/v1").rstrip("/")
    headers = {"Content-Type": "application/json"}
    if judge.api_key is not None:
        headers["Authorization"] = f"Bearer {judge.api_key.get_secret_value()}"
    client = _http_client()

    async def send() -> CallResult:
        from rubrictools.judge.distribution import normalise_logprobs

        try:
            async with client.post(f"{base}/chat/completions", json=body, headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=judge.timeout)) as r:  # fmt: skip
                text = await r.text()
                if r.status >= 400:
                    raise HTTPStatusError(r.status, text, r.headers)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer within {judge.timeout:g} s") from None
        data = json.loads(text)
        choices = data.get("choices") or []
        first = choices[0] if choices else {}
        usage = data.get("usage") or {}
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        prices = _unit_prices(judge.model)
        cost = None if prices is None or pt is None or ct is None else pt * prices[0] + ct * prices[1]
        lp = normalise_logprobs(first.get("logprobs")) if first else None
        many = [(c.get("message") or {}).get("content") for c in choices] if len(choices) > 1 else None
        return CallResult((first.get("message") or {}).get("content"), pt, ct, cost, logprobs=lp, choices=many)

    return send
