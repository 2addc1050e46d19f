"""One judge call over HTTP: through litellm (every provider) or directly (OpenAI wire format).

Both transports send the same request body, read the same fields back and go through the
same retry loop (:mod:`rubrictools.judge.retry`); only the sender differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from rubrictools.judge.config import Judge
from rubrictools.judge.distribution import normalise_logprobs
from rubrictools.judge.pricing import cache_prices, token_cost, unit_prices
from rubrictools.judge.prompt_cache import marks_cache, with_cache_mark
from rubrictools.judge.providers import chat_url, load_litellm, request_headers, wire_model
from rubrictools.judge.result import CallResult, usage_details
from rubrictools.judge.retry import Sender, with_retries
from rubrictools.judge.throttle import Throttle

T = TypeVar("T")

__all__ = ["HTTPStatusError", "aclose_clients", "chat_body", "clients_in_use", "complete", "with_clients_closed"]

_CLIENTS: dict[int, Any] = {}
_USERS: dict[int, int] = {}  # per loop: grading runs using its session now (see clients_in_use)


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


@contextlib.asynccontextmanager
async def clients_in_use() -> AsyncIterator[None]:
    """Keep the loop's session open while a grading run uses it; the last run on the loop to
    finish closes it. Concurrent :func:`rubrictools.agrade` calls on one loop (an Inspect eval's
    samples) share the session: the first to finish must not close it under the others."""
    key = id(asyncio.get_running_loop())
    _USERS[key] = _USERS.get(key, 0) + 1
    try:
        yield
    finally:
        _USERS[key] -= 1
        if _USERS[key] == 0:
            del _USERS[key]
            await aclose_clients()


async def with_clients_closed(work: Awaitable[T]) -> T:
    """Await ``work``, then close the direct transport's session of this loop (a call made
    from sync code runs on a loop of its own, which would otherwise leave it open).

    >>> asyncio.run(with_clients_closed(asyncio.sleep(0, result=7)))
    7
    """
    try:
        return await work
    finally:
        if not _USERS.get(id(asyncio.get_running_loop())):
            await aclose_clients()


async def complete(
    judge: Judge,
    messages: list[dict[str, str]],
    output: dict[str, Any] | None,
    *,
    max_attempts: int,
    max_tokens: int | None = None,
    extra: dict[str, Any] | None = None,
    throttle: Throttle | None = None,
) -> CallResult:
    """Send ``messages`` with at most ``max_attempts`` HTTP requests.

    ``output`` holds the structured-output fields of the request
    (:func:`rubrictools.judge.dialects.format_fields`); ``max_tokens`` caps the reply.
    Retries 429, 5xx, timeouts and connection errors with exponential backoff and full
    jitter, honouring ``Retry-After``; any other error fails at once.
    """
    if judge.wire_transport == "direct":
        send = _direct_sender(judge, chat_body(judge, messages, output, extra, max_tokens=max_tokens))
    else:
        send = _litellm_sender(judge, _litellm_kwargs(judge, messages, output, extra, max_tokens))
    return await with_retries(judge, max_attempts, send, throttle)


def _litellm_kwargs(
    judge: Judge,
    messages: list[dict[str, str]],
    output: dict[str, Any] | None,
    extra: dict[str, Any] | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """``litellm.acompletion``'s arguments: fields litellm has no parameter for (vLLM's
    ``guided_json``) travel in ``extra_body``; an Anthropic model's shared prefix is marked
    for its prompt cache (:mod:`rubrictools.judge.prompt_cache`)."""
    kwargs: dict[str, Any] = {
        "model": judge.model,
        "messages": with_cache_mark(messages) if marks_cache(judge.model) else messages,
        "temperature": judge.temperature,
        "timeout": judge.timeout,
        "num_retries": 0,
        "max_retries": 0,
        **judge.litellm_kwargs,
    }
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if judge.api_base is not None:
        kwargs["api_base"] = judge.api_base
    if judge.api_key is not None:
        kwargs["api_key"] = judge.api_key.get_secret_value()
    for k, v in (output or {}).items():
        if k == "response_format":
            kwargs[k] = v
        else:
            kwargs.setdefault("extra_body", {})[k] = v
    if extra:
        kwargs.update(extra)  # e.g. logprobs/top_logprobs, or n samples at temperature 1
    return kwargs


def chat_body(
    judge: Judge,
    messages: list[dict[str, str]],
    output: dict[str, Any] | None,
    extra: dict[str, Any] | None = None,
    *,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The OpenAI chat-completions request body of one call (no secrets): what the direct
    transport posts and what a provider batch file holds per line."""
    body: dict[str, Any] = {
        "model": wire_model(judge.model),
        "messages": messages,
        "temperature": judge.temperature,
        **judge.litellm_kwargs,
    }
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if output:
        body.update(output)
    if extra:
        body.update(extra)
    return body


def _litellm_sender(judge: Judge, kwargs: dict[str, Any]) -> Sender:
    """One ``litellm.acompletion`` request, its answer as a CallResult (attempts and latency unset)."""
    litellm = load_litellm()

    async def send() -> CallResult:
        resp = await litellm.acompletion(**kwargs)
        content = resp.choices[0].message.content if resp.choices else None
        usage = getattr(resp, "usage", None)
        try:
            cost: float | None = float(litellm.completion_cost(completion_response=resp, model=judge.model))
        except Exception:  # noqa: BLE001  # litellm raises assorted errors when it has no price; the row's cost is then null
            cost = None
        first = resp.choices[0] if resp.choices else None
        lp = normalise_logprobs(getattr(first, "logprobs", None)) if first is not None else None
        choices = [c.message.content for c in resp.choices] if resp.choices and len(resp.choices) > 1 else None
        return CallResult(
            content,
            getattr(usage, "prompt_tokens", None),
            getattr(usage, "completion_tokens", None),
            cost,
            logprobs=lp,
            choices=choices,
            finish_reason=getattr(first, "finish_reason", None),
            **usage_details(getattr(first, "message", None), usage),
        )

    return send


def _direct_sender(judge: Judge, body: dict[str, Any]) -> Sender:
    """One POST of ``body`` to ``{api_base}/chat/completions`` (OpenAI wire format) as a CallResult."""
    import aiohttp

    url, headers = chat_url(judge), request_headers(judge)
    client = _http_client()

    async def send() -> CallResult:
        try:
            async with client.post(
                url,
                json=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=judge.timeout),
            ) as r:
                text = await r.text()
                if r.status >= 400:
                    raise HTTPStatusError(r.status, text, r.headers)
        except TimeoutError:
            raise TimeoutError(f"no answer within {judge.timeout:g} s") from None
        data = json.loads(text)
        choices = data.get("choices") or []
        first = choices[0] if choices else {}
        usage = data.get("usage") or {}
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        details = usage_details(first.get("message"), usage)
        cost = token_cost(
            unit_prices(judge.model),
            pt,
            ct,
            cached_tokens=details["cached_tokens"],
            cache_write_tokens=details["cache_write_tokens"],
            cache_prices=cache_prices(judge.model),
        )
        lp = normalise_logprobs(first.get("logprobs")) if first else None
        many = [(c.get("message") or {}).get("content") for c in choices] if len(choices) > 1 else None
        content = (first.get("message") or {}).get("content")
        return CallResult(
            content,
            pt,
            ct,
            cost,
            logprobs=lp,
            choices=many,
            finish_reason=first.get("finish_reason") if first else None,
            **details,
        )

    return send
