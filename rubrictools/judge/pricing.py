"""Prices per token (litellm's table), live and in provider batches, and budget checks."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Sequence
from typing import Any

from rubrictools.judge.config import Judge
from rubrictools.judge.image_parts import content_text, has_remote_image
from rubrictools.judge.model_table import bundled_entry, bundled_models, litellm_may_know
from rubrictools.judge.providers import load_litellm
from rubrictools.stack import user_stacklevel

__all__ = [
    "batch_prices",
    "cache_prices",
    "context_window",
    "model_limit",
    "require_prices",
    "require_vision",
    "takes_images",
    "token_cost",
    "unit_prices",
    "warn_over_context",
    "warn_unknown_prices",
]

PRICES: dict[str, tuple[float, float] | None] = {}
_MISSES: dict[str, int] = {}  # model -> size of litellm's price table when it had no price for it
_WARNED: set[str] = set()
_LOOPBACK = ("://localhost", "://127.", "://[::1]", "://0.0.0.0")


def _closest_priced(model: str) -> str | None:
    name = model.partition("/")[2] or model
    table = bundled_models() if not litellm_may_know(model) else None
    try:
        known = list(table if table is not None else load_litellm().model_cost)
    except Exception:  # noqa: BLE001  # litellm's price table may fail to load; no suggestion is then made
        return None
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
    return found[0] if found else None


def _did_you_mean(model: str) -> str:
    near = _closest_priced(model)
    return f" (did you mean {near!r}?)" if near else ""


def warn_unknown_prices(judges: Sequence[Judge]) -> None:
    """Warn once per model when litellm has no price for a judge's model (its ``cost_usd``
    will be null), naming the model, the closest priced name and how to register a price. A
    server on this machine (``api_base`` on localhost) costs nothing and is not warned about,
    unless its name is close to a priced one (a misspelling, e.g. behind a local proxy)."""
    for j in judges:
        if j.model in _WARNED or unit_prices(j.model) is not None:
            continue
        hint = _did_you_mean(j.model)
        if j.api_base and any(h in j.api_base for h in _LOOPBACK) and not hint:
            continue  # a local model: free, and not a misspelling of a priced name
        _WARNED.add(j.model)
        warnings.warn(
            f"litellm has no price for model {j.model!r}{hint}: cost_usd will be null and max_cost_usd cannot be "
            f"used. Register one with litellm.register_model({{{j.model!r}: {{'input_cost_per_token': ..., "
            "'output_cost_per_token': ..., 'litellm_provider': ...}})",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def unit_prices(model: str) -> tuple[float, float] | None:
    """(dollars per prompt token, per completion token) from litellm's price table.

    A price found is cached for the process. A price not found is remembered only while
    litellm's table is unchanged: ``litellm.register_model`` (which the unknown-price warning
    tells the user to call) adds to the table, and the next call looks the model up again.
    """
    if model not in PRICES and not litellm_may_know(model):
        return None  # not cached: litellm, once imported, may hold a price registered for it
    if model in PRICES:
        return PRICES[model]
    row = bundled_entry(model)  # a first grade with a priced name need not import litellm
    if (
        row is not None
        and isinstance(row.get("input_cost_per_token"), (int, float))
        and isinstance(row.get("output_cost_per_token"), (int, float))
    ):
        PRICES[model] = (float(row["input_cost_per_token"]), float(row["output_cost_per_token"]))  # type: ignore[arg-type]  # reason: checked numbers just above
        return PRICES[model]
    litellm = load_litellm()
    table = len(getattr(litellm, "model_cost", {}))
    if _MISSES.get(model) == table:
        return None
    try:
        p, _ = litellm.cost_per_token(model=model, prompt_tokens=1_000_000, completion_tokens=0)
        _, c = litellm.cost_per_token(model=model, prompt_tokens=0, completion_tokens=1_000_000)
    except Exception:  # noqa: BLE001  # litellm raises its own and plain exceptions for 'no price'; the miss is remembered until its table changes
        _MISSES[model] = table
        return None
    PRICES[model] = (float(p) / 1e6, float(c) / 1e6)
    _MISSES.pop(model, None)
    return PRICES[model]


def batch_prices(model: str) -> tuple[float, float] | None:
    """Dollars per prompt and per completion token in a batch: litellm's ``*_batches`` prices,
    else half the live prices (the usual batch discount), else None."""
    try:
        info = load_litellm().get_model_info(model=model)
        pin, pout = info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches")
        if pin is not None and pout is not None:
            return float(pin), float(pout)
    except Exception:  # noqa: BLE001  # litellm raises assorted errors for a model without batch prices; the live prices are used
        pass
    live = unit_prices(model)
    return None if live is None else (live[0] / 2, live[1] / 2)


def token_cost(
    prices: tuple[float, float] | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    *,
    cached_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    cache_prices: tuple[float | None, float | None] = (None, None),
) -> float | None:
    """Dollars for a call's tokens at ``prices``; None when a price or a count is unknown.

    Of the prompt tokens, ``cached_tokens`` (served from the provider's prompt cache) are billed
    at the cached-input price and ``cache_write_tokens`` (written to it, Anthropic) at the
    cache-write price (``cache_prices``; the input price where one is unknown):

        cost = (prompt - cached - written) * p_in + cached * p_read + written * p_write + completion * p_out

    >>> round(token_cost((4e-7, 1.6e-6), 2000, 10, cached_tokens=1536, cache_prices=(1e-7, None)), 9)
    0.0003552
    """
    if prices is None or prompt_tokens is None or completion_tokens is None:
        return None
    read, write = cached_tokens or 0, cache_write_tokens or 0
    p_read = prices[0] if cache_prices[0] is None else cache_prices[0]
    p_write = prices[0] if cache_prices[1] is None else cache_prices[1]
    plain = max(prompt_tokens - read - write, 0)
    return plain * prices[0] + read * p_read + write * p_write + completion_tokens * prices[1]


def cache_prices(model: str) -> tuple[float | None, float | None]:
    """(dollars per cached prompt token read, per token written to the cache) in litellm's
    price table; None where it gives none.

    >>> cache_prices("openai/gpt-4.1-mini")
    (1e-07, None)
    """
    info = _model_info(model) or {}
    read, write = info.get("cache_read_input_token_cost"), info.get("cache_creation_input_token_cost")
    as_price = lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None  # noqa: E731 - two uses, one line
    return as_price(read), as_price(write)


def require_prices(judges: Sequence[Judge], max_cost_usd: float | None) -> None:
    """Refuse a budget that cannot be enforced: ``max_cost_usd`` needs a known price for every judge."""
    if max_cost_usd is None:
        return
    if max_cost_usd < 0:
        raise ValueError(f"max_cost_usd must be >= 0, got {max_cost_usd!r}")
    for j in judges:
        if unit_prices(j.model) is None:
            hint = _did_you_mean(j.model)
            raise ValueError(
                f"max_cost_usd cannot be enforced: litellm has no price for model {j.model!r}{hint}. Give it one "
                f"before grading: litellm.register_model({{{j.model!r}: {{'input_cost_per_token': ..., "
                "'output_cost_per_token': ..., 'litellm_provider': 'openai'}}), or drop max_cost_usd"
            )


def _model_info(model: str) -> Any:
    """litellm's model info for ``model``: its bundled table's row while litellm is not imported,
    else litellm's answer; None when litellm does not know the model."""
    if not litellm_may_know(model):
        return None
    info = bundled_entry(model)
    if info is not None:
        return info
    try:
        return load_litellm().get_model_info(model=model)
    except Exception:  # noqa: BLE001  # litellm raises assorted errors for a model it does not know; unknown is the answer
        return None


def model_limit(model: str, *fields: str) -> int | None:
    """The first of ``fields`` that litellm's model info gives for ``model`` (a token limit),
    None when litellm does not know the model or none is set."""
    info = _model_info(model)
    if info is None:
        return None
    value = next((info.get(f) for f in fields if info.get(f)), None)
    return int(value) if value else None


def context_window(model: str) -> int | None:
    """The most prompt tokens ``model`` takes (litellm's ``max_input_tokens``), None when unknown."""
    return model_limit(model, "max_input_tokens", "max_tokens")


def warn_over_context(judge: Judge, requests: Sequence[tuple[Any, Sequence[dict[str, Any]]]]) -> None:
    """Warn, before any call, when requests (``(submission id, messages)``) of ``judge`` hold
    more prompt tokens than its model's context window (they would fail, or be cut, at the provider's price). Only
    requests with at least as many characters as the window has tokens are counted (a token
    is rarely under one character), so the check costs nothing on ordinary inputs."""
    window = context_window(judge.model)
    if window is None:
        return
    long = [(i, m) for i, m in requests if sum(len(content_text(x.get("content"))) for x in m) >= window]
    if not long:
        return
    count = load_litellm().token_counter
    over = [
        (i, n)
        for i, m in long
        if (n := count(model=judge.model, messages=list(m), use_default_image_token_count=has_remote_image(m))) > window
    ]
    if over:
        i, n = over[0]
        warnings.warn(
            f"{len(over)} request(s) to {judge.model!r} exceed its context window of {window:,} tokens (the first, "
            f"for submission id {i!r}, holds {n:,}); shorten or split those submissions, or use a model with a "
            "longer window",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def takes_images(model: str) -> bool | None:
    """litellm's ``supports_vision`` for ``model``: True, False, or None when litellm does not
    know the model (a local server's, usually)."""
    info = _model_info(model)
    return None if info is None else bool(info.get("supports_vision"))


def require_vision(judges: Sequence[Judge], with_images: int) -> None:
    """Before any call: refuse a judge whose model litellm says takes no images when
    ``with_images`` submissions carry some; warn about a model litellm does not know."""
    if not with_images:
        return
    for j in judges:
        ok = takes_images(j.model)
        if ok is False:
            raise ValueError(
                f"{with_images} submission(s) carry images, but model {j.model!r} does not take images "
                "(litellm: supports_vision is false); use a vision model, or drop image_column / the image parts"
            )
        if ok is None:
            warnings.warn(
                f"litellm does not know whether {j.model!r} takes images; {with_images} submission(s) send them "
                "(a text-only server rejects them or ignores them)",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
