"""Pairwise runs: the tasks one pair needs, and the preference table their answers make.

:data:`PAIR_MODES` maps ``grade_pairs(mode=...)`` to the :class:`~rubrictools.judge.PairTask`
list of one pair (each question once per presentation order when ``swap=True``). The
executor, cache, retries, budget, streaming and batch jobs run these tasks like any other.

:func:`preference_table` joins the two orders of each question into one row:

- ``preferred_ab``: the judge's answer with A shown first; ``preferred_ba``: with B shown
  first, mapped back to A's side (``"A"``, ``"B"`` or ``"tie"``);
- ``consistent``: both orders gave the same answer (null without ``swap`` or when one failed);
- ``preferred``: the answer both orders agree on; for an inconsistent pair, ``"tie"``,
  the A-first answer (``inconsistent="first"``) or an error row (``"error"``);
- ``value``: A's share, 1 / 0.5 / 0 for A / tie / B; with several judges, ``judge="ensemble"``
  rows hold the weighted vote: A when the judges' weighted mean value is above 0.5, B below,
  a tie at exactly 0.5.

A failed call in either order makes the row an explicit error (``preferred`` null); the
other order's answer stays visible in its column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from rubrictools.grading.assemble import row_frame
from rubrictools.grading.inputs import AnyJudge, Inputs
from rubrictools.grading.options import GradeOptions
from rubrictools.judge import JudgeTask, PairTask, Subject
from rubrictools.judge.tasks import PAIR_VALUES
from rubrictools.rubric import Rubric

__all__ = ["PAIR_MODES", "PREFERENCE_COLUMNS", "preference_table"]


def _per_criterion(subject: Subject, judged: Rubric, opts: GradeOptions) -> list[JudgeTask]:
    orders = (False, True) if opts.swap else (False,)
    return [PairTask(subject, c, swapped=s, ties=opts.ties) for c in judged for s in orders]


def _holistic(subject: Subject, judged: Rubric, opts: GradeOptions) -> list[JudgeTask]:
    orders = (False, True) if opts.swap else (False,)
    return [PairTask(subject, None, swapped=s, ties=opts.ties) for s in orders]


PAIR_MODES: dict[str, Callable[[Subject, Rubric, GradeOptions], list[JudgeTask]]] = {
    "per_criterion": _per_criterion,
    "holistic": _holistic,
}
"""``grade_pairs(mode=...)`` name -> the tasks of one pair."""

PREFERENCE_COLUMNS = (
    "id",
    "system_a",
    "system_b",
    "criterion",
    "judge",
    "preferred",
    "value",
    "preferred_ab",
    "preferred_ba",
    "consistent",
    "explanation",
    "explanation_ba",
    "error",
    "weight",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cached",
    "attempts",
    "latency_s",
    "raw_response",
)
"""Columns of the preference table, in order."""

_KEY = ["__row", "__pos", "__judge"]


def _orders(cols: dict[str, list[Any]], id_dtype: pl.DataType) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The task rows of each presentation order: A shown first (variant 0), B first (1)."""
    df = row_frame(cols, id_dtype)
    return df.filter(pl.col("__variant") == 0), df.filter(pl.col("__variant") == 1)


def _join_orders(ab: pl.DataFrame, ba: pl.DataFrame, swap: bool) -> pl.DataFrame:
    measured = ["verdict", "explanation", "error", "raw_response"]
    measured += ["prompt_tokens", "completion_tokens", "cost_usd", "cached", "attempts", "latency_s"]
    if not swap:
        ba = ab.select(*_KEY, *(pl.lit(None, dtype=ab.schema[c]).alias(c) for c in measured))
    df = ab.join(ba.select(_KEY + measured), on=_KEY, how="left", suffix="_ba", maintain_order="left")

    def add(name: str, other: str) -> pl.Expr:  # the cost of both orders; null when neither reports it
        a, b = pl.col(name), pl.col(other)
        return pl.when(a.is_null() & b.is_null()).then(None).otherwise(pl.sum_horizontal(a, b))

    both_raw = pl.concat_str("raw_response", "raw_response_ba", separator="\n---\n", ignore_nulls=True)
    return df.with_columns(
        pl.col("verdict").alias("preferred_ab"),
        pl.col("verdict_ba").alias("preferred_ba"),
        add("prompt_tokens", "prompt_tokens_ba").alias("prompt_tokens"),
        add("completion_tokens", "completion_tokens_ba").alias("completion_tokens"),
        add("cost_usd", "cost_usd_ba").alias("cost_usd"),
        add("attempts", "attempts_ba").alias("attempts"),
        add("latency_s", "latency_s_ba").alias("latency_s"),
        (pl.col("cached") & pl.col("cached_ba").fill_null(True)).alias("cached"),
        pl.when(pl.col("raw_response").is_null() & pl.col("raw_response_ba").is_null())
        .then(None)
        .otherwise(both_raw)
        .alias("raw_response"),
    )


def _decide(df: pl.DataFrame, swap: bool, inconsistent: str) -> pl.DataFrame:
    ab, ba = pl.col("preferred_ab"), pl.col("preferred_ba")
    err_ab = pl.format("A shown first: {}", pl.col("error"))
    err_ba = pl.format("B shown first: {}", pl.col("error_ba"))
    call_error = pl.concat_str(err_ab, err_ba, separator="; ", ignore_nulls=True)
    if not swap:
        return df.with_columns(ab.alias("preferred"), pl.lit(None, dtype=pl.Boolean).alias("consistent"))
    consistent = pl.when(ab.is_not_null() & ba.is_not_null()).then(ab == ba)
    policy = {"tie": pl.lit("tie"), "first": ab, "error": pl.lit(None, dtype=pl.String)}[inconsistent]
    preferred = pl.when(ab.is_null() | ba.is_null()).then(None).when(ab == ba).then(ab).otherwise(policy)
    disagree = pl.format("inconsistent: A shown first gives {}, B shown first gives {}", ab, ba)
    error = (
        pl.when(ab.is_null() | ba.is_null())
        .then(call_error)
        .when((ab != ba) & pl.lit(inconsistent == "error"))
        .then(disagree)
    )
    return df.with_columns(preferred.alias("preferred"), consistent.alias("consistent"), error.alias("error"))


def _ensemble(df: pl.DataFrame, judges: Sequence[AnyJudge]) -> pl.DataFrame:
    """``judge="ensemble"`` rows: the weighted mean of the judges' values per question."""
    weights = {j.label: float(getattr(j, "weight", 1.0)) for j in judges}
    w = pl.col("judge").replace_strict(weights, return_dtype=pl.Float64)
    ok = pl.col("value").is_not_null()
    mean = (pl.col("value") * w).filter(ok).sum() / w.filter(ok).sum()
    agg = df.group_by("__row", "__pos", maintain_order=True).agg(
        pl.col("id", "system_a", "system_b", "criterion", "weight").first(),
        mean.alias("value"),
        pl.when(ok.sum() == 0).then(pl.lit("no judge answered")).alias("error"),
    )
    side = pl.when(pl.col("value") > 0.5).then(pl.lit("A")).when(pl.col("value") < 0.5).then(pl.lit("B"))
    agg = agg.with_columns(
        side.otherwise(pl.when(pl.col("value").is_not_null()).then(pl.lit("tie"))).alias("preferred"),
    ).with_columns(
        pl.col("preferred").replace_strict(PAIR_VALUES, default=None, return_dtype=pl.Float64).alias("value"),
        pl.lit("ensemble").alias("judge"),
        pl.lit(len(judges), dtype=pl.Int64).alias("__judge"),
    )
    return pl.concat([df, agg], how="diagonal_relaxed")


def preference_table(
    cols: dict[str, list[Any]], inp: Inputs, judges: Sequence[AnyJudge], opts: GradeOptions
) -> pl.DataFrame:
    """The preference table (:data:`PREFERENCE_COLUMNS`) from the pairwise tasks' rows."""
    ab, ba = _orders(cols, inp.id_dtype)
    df = _decide(_join_orders(ab, ba, opts.swap), opts.swap, opts.inconsistent)
    sys_a, sys_b = inp.systems or ([], [])
    systems = pl.DataFrame(
        {"__row": range(len(sys_a)), "system_a": sys_a, "system_b": sys_b},
        schema={"__row": pl.Int64, "system_a": pl.String, "system_b": pl.String},
    )
    df = df.join(systems, on="__row", how="left", maintain_order="left").with_columns(
        pl.col("preferred").replace_strict(PAIR_VALUES, default=None, return_dtype=pl.Float64).alias("value")
    )
    df = df.select(*_KEY, *PREFERENCE_COLUMNS)
    if len(judges) > 1:
        df = _ensemble(df, judges)
    return df.sort(_KEY, maintain_order=True).select(PREFERENCE_COLUMNS)
