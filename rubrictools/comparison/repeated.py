"""`consistency`: does grading the same submissions again give the same verdicts?"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

from rubrictools import metrics
from rubrictools.comparison.runs import judge_rows, open_run, with_values
from rubrictools.deprecation import adapted, renamed
from rubrictools.human_agreement import inter_rater
from rubrictools.metrics.resampling import check_resampling
from rubrictools.rubric import Rubric
from rubrictools.rubric.scoring import score
from rubrictools.stack import user_stacklevel

__all__ = ["consistency"]


@adapted(renamed(bootstrap="n_resamples"))
def consistency(
    *runs: Any,
    rubric: Rubric | None = None,
    judge: str | None = None,
    root: Any = None,
    n_resamples: int = 1000,
    seed: int | None = 0,
) -> pl.DataFrame:
    """Repeated-run consistency of a rubric and judge: the same submissions graded two or more
    times.

    A criterion a judge cannot apply the same way twice shows a low kappa here before any human
    label is collected.

    Parameters
    ----------
    *runs
        Two or more gradings of the same submissions: run ids (or ``"last"``, or unique
        prefixes) in the store at ``root``, :class:`~rubrictools.records.Run` objects or
        verdict tables. Grade the repeats with ``cache=False``: with the response cache a
        repeat returns the first run's answers (a run answered wholly from the cache draws a
        warning). Pass ``rubric`` by keyword: a positional one would be read as a run.
    rubric
        The rubric that scores every run; without it, the first recorded run's rubric is used,
        else each verdict table's own ``value`` and ``weight`` columns.
    judge
        Which judge's rows to compare when a run holds several (default: the ensemble rows
        when present), as in :func:`rubrictools.score`.
    root
        The run store to look run ids up in (``None``: where ``record=True`` writes).
    n_resamples, seed
        The cluster bootstrap's resamples for the agreement intervals (``0``: point estimates
        only) and its seed (``0`` by default: identical calls give identical intervals;
        ``None`` draws afresh).

    Returns
    -------
    polars.DataFrame
        One row per (criterion, metric), sorted, in :func:`rubrictools.inter_rater`'s columns
        (intervals for its metrics only). Per criterion, on the submissions every run graded
        without error: ``all_agree`` (the share whose verdict is the same in every run),
        ``percent_agreement`` and ``fleiss_kappa`` with the runs as raters
        (:func:`rubrictools.inter_rater`, cluster-bootstrap intervals); and on the score
        (``criterion = "__score__"``), ``score_sd``: the mean over submissions of the standard
        deviation of its score across runs, and ``score_consistency``, rubrify's meta-metric
        ``1 - mean_i CV_i`` (:func:`rubrictools.metrics.consistency`: the coefficient of
        variation of each submission's score across runs; 1 = every run scores every
        submission alike).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> a = pl.DataFrame({"id": range(4), "criterion": "greets", "verdict": ["MET", "UNMET", "MET", "UNMET"]})
    >>> b = a.with_columns(pl.Series("verdict", ["MET", "UNMET", "UNMET", "UNMET"]))
    >>> t = rt.consistency(a, b, rubric=rub, n_resamples=0)
    >>> t.filter(pl.col("metric") == "all_agree").select("criterion", "value").row(0)
    ('greets', 0.75)
    """
    check_resampling(n_resamples=n_resamples, seed=seed)
    if len(runs) < 2:
        raise ValueError(f"consistency needs two or more runs of the same grading, got {len(runs)}")
    tables, rub = [], rubric
    for k, run in enumerate(runs):
        v, recorded, _ = open_run(run, root)
        rub = rub if rub is not None else (Rubric.from_dict(recorded) if recorded is not None else None)
        if k == 0:
            first = v.select("id", "criterion")
        compared = v.join(first, on=["id", "criterion"], how="semi") if k else v
        if k and "cached" in v.columns and compared.height and compared["cached"].fill_null(False).all():
            warnings.warn(
                f"run {k + 1}'s answers to run 1's submissions all came from the response cache: it repeats run 1's "
                "answers, not the judge's; grade the repeats with cache=False to measure consistency",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        tables.append(with_values(judge_rows(v, judge), rub).with_columns(pl.lit(f"run {k + 1}").alias("rater")))
    cols = ["id", "criterion", "rater", pl.col("verdict").alias("label"), "error"]
    with_error = [
        t if "error" in t.columns else t.with_columns(pl.lit(None, dtype=pl.String).alias("error")) for t in tables
    ]
    long = pl.concat([t.select(cols) for t in with_error])
    ok = long.filter(pl.col("error").is_null() & pl.col("label").is_not_null())
    complete = ok.filter(pl.col("rater").n_unique().over("id", "criterion") == len(runs))
    kappa = inter_rater(complete.drop("error"), rub, metrics=["percent_agreement", "fleiss_kappa"],
                        n_resamples=n_resamples, seed=seed)  # fmt: skip
    same = complete.group_by("id", "criterion").agg((pl.col("label").n_unique() == 1).alias("same"))
    agree = same.group_by("criterion", maintain_order=True).agg(
        pl.lit("all_agree").alias("metric"),
        pl.col("same").mean().alias("value"),
        pl.len().alias("n_items"),
    )
    scores = pl.concat([score(t, rub).select("id", "score") for t in tables]).drop_nulls("score")
    sd = scores.group_by("id").agg(
        pl.col("score").std(ddof=0).alias("sd"), pl.col("score").mean().alias("mean"), pl.len().alias("k")
    )
    sd = sd.filter(pl.col("k") == len(runs))
    matrix = scores.join(sd.select("id"), on="id").group_by("id").agg(pl.col("score"))["score"].to_list()
    cons = metrics.consistency(np.array(matrix, dtype=float)) if matrix else float("nan")
    spread = pl.DataFrame(
        {
            "criterion": ["__score__", "__score__"],
            "metric": ["score_sd", "score_consistency"],
            "value": [sd["sd"].mean(), cons],
            "n_items": [sd.height, sd.height],
        },
        schema_overrides={"value": pl.Float64, "n_items": pl.Int64},
    )
    extra = pl.concat([agree.with_columns(pl.col("n_items").cast(pl.Int64)), spread], how="vertical_relaxed")
    return pl.concat([kappa, extra], how="diagonal_relaxed").sort("criterion", "metric", maintain_order=True)
