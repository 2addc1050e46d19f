"""`judge_kappas`: how alike several judges' verdicts are, one Cohen's kappa per pair of judges."""

from __future__ import annotations

from typing import Any, Literal

import polars as pl

from rubrictools.frames import to_polars
from rubrictools.human_agreement.judge import agreement
from rubrictools.rubric import Rubric

__all__ = ["judge_kappas"]

Weights = Literal["auto", "linear", "quadratic"] | None

_METRIC = {None: "cohen_kappa", "linear": "kappa_linear", "quadratic": "kappa_quadratic"}


def _chosen(weights: Weights, rubric: Rubric | None, criteria: list[str]) -> Literal["linear", "quadratic"] | None:
    if weights not in ("auto", "linear", "quadratic", None):
        raise ValueError(f"weights must be 'auto', None, 'linear' or 'quadratic', got {weights!r}")
    if weights != "auto":
        return weights
    if rubric is None:
        return None
    scales = {c.name: c.scale for c in rubric.criteria}
    ordinal = all(scales.get(c) == "ordinal" for c in criteria)
    return "quadratic" if ordinal and criteria else None


def judge_kappas(
    verdicts: Any,
    rubric: Rubric | None = None,
    *,
    criterion: str | None = None,
    weights: Weights = "auto",
) -> pl.DataFrame:
    """Cohen's kappa between every pair of judges in a verdict table, pooled over criteria.

    For each pair (a, b) and criterion, kappa is computed on the submissions both judges
    answered (error rows left out); the pooled kappa is the mean over criteria weighted by
    those counts: ``kappa = sum_c n_c kappa_c / sum_c n_c``. With ``weights="auto"`` ordinal
    criteria (``scale="ordinal"`` in the rubric) use quadratic weights, where a 4 against a
    5 counts as a near agreement; other criteria use unweighted kappa. The ``ensemble`` rows
    of :func:`rubrictools.ensemble` are left out.

    Parameters
    ----------
    verdicts
        A verdict table with a ``judge`` column and at least two judges.
    rubric
        The rubric (its options give the label order for weighted kappa).
    criterion
        Only this criterion (default: all, pooled).
    weights
        ``"auto"`` (quadratic for ordinal rubrics, else none), ``None`` (unweighted),
        ``"linear"`` or ``"quadratic"``.

    Returns
    -------
    polars.DataFrame
        One row per ordered pair of different judges: ``judge_a, judge_b, kappa, n, weights``
        (``n`` = the criterion-submission pairs both judged).

    Examples
    --------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 2, 3, 1, 2, 3], "criterion": "ok", "judge": ["a"] * 3 + ["b"] * 3,
    ...                   "verdict": ["MET", "UNMET", "MET", "MET", "UNMET", "UNMET"]})
    >>> rt.judge_kappas(v).select("judge_a", "judge_b", pl.col("kappa").round(3), "n").row(0)
    ('a', 'b', 0.4, 3)
    """
    v = to_polars(verdicts, name="verdicts")
    for col in ("id", "criterion", "judge", "verdict"):
        if col not in v.columns:
            raise ValueError(f"judge_kappas needs a {col!r} column in verdicts (columns: {v.columns})")
    v = v.filter(pl.col("judge") != "ensemble")
    if "error" in v.columns:
        v = v.filter(pl.col("error").is_null())
    if criterion is not None:
        if criterion not in v["criterion"].unique().to_list():
            raise ValueError(
                f"criterion={criterion!r} is not in the verdicts (criteria: {v['criterion'].unique().sort().to_list()})"
            )
        v = v.filter(pl.col("criterion") == criterion)
    judges = v["judge"].unique(maintain_order=True).to_list()
    if len(judges) < 2:
        raise ValueError(f"judge_kappas needs at least two judges in the 'judge' column, found {judges}")
    chosen = _chosen(weights, rubric, v["criterion"].unique().to_list())
    metric = _METRIC[chosen]
    rows = []
    for i, a in enumerate(judges):
        for b in judges[i + 1 :]:
            mine = v.filter(pl.col("judge") == a).drop("judge")
            theirs = v.filter(pl.col("judge") == b).select("id", "criterion", pl.col("verdict").alias("label"))
            t = agreement(mine, theirs, rubric, metrics=[metric], level="criterion", n_resamples=0)
            t = t.filter(pl.col("value").is_not_null() & (pl.col("n") > 0))
            n = int(t["n"].sum()) if t.height else 0
            kappa = float((t["value"] * t["n"]).sum()) / n if n else None
            rows += [(a, b, kappa, n), (b, a, kappa, n)]
    out = pl.DataFrame(
        rows, schema={"judge_a": pl.String, "judge_b": pl.String, "kappa": pl.Float64, "n": pl.Int64}, orient="row"
    )
    return out.with_columns(pl.lit(chosen or "none").alias("weights"))
