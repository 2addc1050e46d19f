"""What a run will cost before it starts (:func:`estimate_cost`) and what it did cost (:func:`usage`)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.deprecation import adapted
from rubrictools.frames import to_polars
from rubrictools.grading.inputs import prepare, resolve_judges
from rubrictools.grading.options import GradeOptions, Mode, moved_judge_settings
from rubrictools.grading.plan import build_calls, with_rubric_constraints
from rubrictools.grading.schedule import predicted_cached_tokens
from rubrictools.judge import Judge, ScriptedJudge
from rubrictools.judge.image_parts import has_remote_image
from rubrictools.judge.pricing import cache_prices, unit_prices, warn_unknown_prices
from rubrictools.judge.providers import load_litellm
from rubrictools.rubric import OutputConstraint, Rubric

__all__ = ["estimate_cost", "usage"]


@adapted(moved_judge_settings)
def estimate_cost(
    df: Any,
    rubric: Rubric | None = None,
    *,
    model: Any,
    column: str = "submission",
    id_column: str | None = None,
    query_column: str | None = None,
    reference_column: str | None = None,
    rubric_column: str | None = None,
    image_column: str | None = None,
    mode: Mode = "per_criterion",
    output_constraints: Sequence[OutputConstraint] = (),
    completion_tokens: int = 80,
) -> pl.DataFrame:
    """Calls, prompt tokens (litellm's token counter) and dollars before running anything.

    ``cost = prompt_tokens * p_in + calls * completion_tokens * p_out`` with litellm's prices,
    less what the provider's prompt cache should save: ``cached_tokens * (p_in - p_cached)``,
    where ``cached_tokens`` is a prediction (the shared prefix of every request after the first
    about a submission, when it is 1,024 tokens or more; :mod:`rubrictools.grading.schedule`).
    ``p_in``, ``p_out`` and ``p_cached`` are the model's prices per input, output and cached
    input token.

    What it does not count: few-shot ``examples=`` and ``criterion_context="full"`` (they
    lengthen every prompt; the full context about threefold with 30 criteria), the longer
    replies of ``evidence=`` / ``confidence=`` (raise ``completion_tokens``), the extra sampled
    calls of ``distribution=True``, batch prices (about half) and answers already in the
    response cache. Check such a run with :func:`rubrictools.prompts` (exact prompts) or on a
    small slice with ``grade(max_cost_usd=...)``.

    Parameters
    ----------
    df, rubric
        The submissions and the rubric, as :func:`rubrictools.grade` would be given them.
    model
        The judge(s), as in :func:`rubrictools.grade` (required). A
        :class:`~rubrictools.ScriptedJudge` costs nothing; a judge you wrote yourself gets its
        calls counted and null tokens and cost.
    column, id_column, query_column, reference_column, rubric_column, image_column, mode
        As in :func:`rubrictools.grade`: they decide the requests, hence the calls and tokens.
    output_constraints
        Those :func:`rubrictools.grade` would be given (the judge is told them, so they
        lengthen every prompt a little); the rubric's own are always counted.
    completion_tokens
        The assumed reply length per call (default 80), per criterion asked in ``per_item``
        and ``grouped`` modes.

    Returns
    -------
    polars.DataFrame
        One row per judge: ``judge, calls, prompt_tokens, cached_tokens, completion_tokens,
        cost_usd`` (null when the model has no known price).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}])
    >>> df = pl.DataFrame({"submission": ["hi", "yo"]})
    >>> rt.estimate_cost(df, rubric, model="rubrictools/scripted")["calls"].item()
    2
    """
    opts = GradeOptions.pick(locals())
    inp = prepare(df, rubric, opts)
    opts = with_rubric_constraints(opts, inp.rubrics)
    judges = resolve_judges(model)
    warn_unknown_prices([j for j in judges if isinstance(j, Judge)])
    calls = build_calls(inp, judges, opts)
    rows: list[tuple[str, int, int | None, int | None, int | None, float | None]] = []
    for ji, j in enumerate(judges):
        mine = [c for c in calls if c.judge_i == ji]
        if isinstance(j, ScriptedJudge):
            rows.append((j.label, len(mine), 0, 0, 0, 0.0))
            continue
        if not isinstance(j, Judge):  # a judge you wrote: what it spends is its own business
            rows.append((j.label, len(mine), None, None, None, None))
            continue
        litellm = load_litellm()
        pt: int = sum(
            litellm.token_counter(
                model=j.model, messages=c.messages, use_default_image_token_count=has_remote_image(c.messages)
            )
            for c in mine
        )
        per_item = mode in ("per_item", "grouped")  # a reply holds one verdict per criterion asked
        ct = sum(completion_tokens * (len(c.task.asks()) if per_item else 1) for c in mine)
        counter = functools.partial(litellm.token_counter, model=j.model)
        cached = predicted_cached_tokens(mine, j, lambda m, count=counter: count(messages=m))
        try:
            p_cost, c_cost = litellm.cost_per_token(model=j.model, prompt_tokens=pt, completion_tokens=ct)
            cost: float | None = float(p_cost + c_cost) - _cache_saving(j.model, cached)
        except Exception:  # noqa: BLE001  # litellm's cost functions raise assorted errors for an unpriced model; the estimate's cost is then null, as documented
            cost = None
        rows.append((j.label, len(mine), pt, cached, ct, cost))
    schema = {
        "judge": pl.String,
        "calls": pl.Int64,
        "prompt_tokens": pl.Int64,
        "cached_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "cost_usd": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _cache_saving(model: str, cached: int) -> float:
    """What ``cached`` prompt tokens cost less at the model's cached-input price (0 without one)."""
    prices, (read, _) = unit_prices(model), cache_prices(model)
    return 0.0 if prices is None or read is None else cached * (prices[0] - read)


def _provider_cached(v: pl.DataFrame) -> pl.Expr:
    """The provider's cached prompt tokens per row (0 where none were reported or the table predates them)."""
    return pl.col("cached_tokens").fill_null(0) if "cached_tokens" in v.columns else pl.lit(0, dtype=pl.Int64)


def usage(verdicts: Any) -> pl.DataFrame:
    """Summarise a grading run per judge: calls, cache hits, errors, tokens, cost, latency.

    ``cost_usd`` is what this run spent (cache hits cost nothing); ``cost_saved_usd`` is
    what the cached answers had cost when first made. ``prompt_cache_tokens`` are the prompt
    tokens the provider's prompt cache served (billed at its cached-input price, in
    ``cost_usd``), ``prompt_cache_share`` their share of the prompt tokens sent (null when
    none was sent).

    Parameters
    ----------
    verdicts
        A verdict table from :func:`rubrictools.grade` (the ``ensemble`` rows are left out:
        they make no call).

    Returns
    -------
    polars.DataFrame
        One row per judge: ``judge, rows, cached, errors, http_attempts, prompt_tokens,
        completion_tokens, prompt_cache_tokens, prompt_cache_share, cost_usd, cost_saved_usd,
        mean_latency_s, max_latency_s``.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rubric = rt.Rubric.from_dict([{"name": "thanks", "requirement": "Thanks the customer"}])
    >>> judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "Thanks" in text else "UNMET")
    >>> df = pl.DataFrame({"submission": ["Thanks!", "No."]})
    >>> v = rt.grade(df, rubric, model=judge, progress=False, record=False)
    >>> rt.usage(v).select("judge", "rows", "cached", "errors", "cost_usd").rows()  # a scripted judge costs nothing
    [('scripted', 2, 0, 0, 0.0)]
    """
    v = to_polars(verdicts, name="verdicts").filter(pl.col("judge") != "ensemble")
    out = v.group_by("judge", maintain_order=True).agg(
        pl.len().alias("rows"),
        pl.col("cached").sum().alias("cached"),
        pl.col("error").is_not_null().sum().alias("errors"),
        pl.col("attempts").sum().alias("http_attempts"),
        pl.col("prompt_tokens").filter(~pl.col("cached")).sum().alias("prompt_tokens"),
        pl.col("completion_tokens").filter(~pl.col("cached")).sum().alias("completion_tokens"),
        _provider_cached(v).filter(~pl.col("cached")).sum().alias("prompt_cache_tokens"),
        pl.col("cost_usd").filter(~pl.col("cached")).sum().alias("cost_usd"),
        pl.col("cost_usd").filter(pl.col("cached")).sum().alias("cost_saved_usd"),
        pl.col("latency_s").filter(~pl.col("cached")).mean().alias("mean_latency_s"),
        pl.col("latency_s").filter(~pl.col("cached")).max().alias("max_latency_s"),
    )
    share = pl.when(pl.col("prompt_tokens") > 0).then(pl.col("prompt_cache_tokens") / pl.col("prompt_tokens"))
    cols = out.columns
    at = cols.index("prompt_cache_tokens") + 1  # null when no prompt token was sent (a scripted judge)
    return out.with_columns(share.alias("prompt_cache_share")).select(*cols[:at], "prompt_cache_share", *cols[at:])
