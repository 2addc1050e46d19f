"""Combine the verdicts of several judges into one ensemble verdict per (submission, criterion).

The same aggregation rules as ``grade(..., model=[...])`` (see
:mod:`rubrictools.grading.votes`), applied to any verdict table with a ``judge`` column,
e.g. recorded judgments from several models.

>>> import polars as pl, rubrictools as rt
>>> v = pl.DataFrame({"id": [1, 1, 1], "criterion": "a", "verdict": ["MET", "MET", "UNMET"],
...                   "judge": ["x", "y", "z"], "weight": 1.0})
>>> rt.ensemble(v).select("id", "verdict", "explanation").row(0)
(1, 'MET', 'majority of 3 judges: MET x2, UNMET x1')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from rubrictools.grading.votes import (
    AGGREGATIONS,
    Abstentions,
    Snap,
    Unanimous,
    VoteRules,
    aggregate_votes,
    option_frame,
)
from rubrictools.judge.config import check_weight
from rubrictools.verdicts import VERDICT_SCHEMA, validate_verdicts

if TYPE_CHECKING:  # pragma: no cover
    from rubrictools.rubric import Rubric

__all__ = ["ensemble"]


def ensemble(
    verdicts: Any,
    rubric: Rubric | None = None,
    *,
    method: str = "majority",
    per_criterion: Mapping[str, str] | None = None,
    judge_weights: Mapping[str, float] | None = None,
    judges: list[str] | None = None,
    keep_votes: bool = False,
    abstentions: Abstentions = "vote",
    unanimous: Unanimous = "lowest",
    snap: Snap = "voted",
) -> pl.DataFrame:
    """Aggregate a multi-judge verdict table into ``judge="ensemble"`` rows.

    Errored votes do not vote; a (submission, criterion) whose every vote failed stays an error
    row.

    Parameters
    ----------
    verdicts
        A verdict table with a ``judge`` column naming the judge of every row, e.g. the judges'
        rows of a ``grade(model=[...])`` table or recorded judgments from several models.
    rubric
        Checks the labels and gives their values, the options to snap to and each criterion's
        own ``aggregation``. Without it the table needs a ``weight`` column
        (:func:`~rubrictools.validate_verdicts`).
    method
        One of ``majority`` (default), ``weighted`` (by ``judge_weights``), ``any``,
        ``unanimous``, ``mean``, ``weighted_mean`` or ``median`` (ordinal); see
        :mod:`rubrictools.grading.votes`. A criterion's own ``aggregation`` in the rubric, then
        ``per_criterion``, override it.
    per_criterion
        Criterion name -> method, for the criteria that aggregate otherwise (applied over the
        rubric's ``aggregation``).
    judge_weights
        Judge name -> weight for ``weighted`` and ``weighted_mean``; a judge not named weighs 1,
        and a name that is not a judge of the table is an error.
    judges
        Restricts the voters to these judges (``None``: every judge of the table).
    keep_votes
        ``True`` returns the votes followed by the ensemble rows; ``False`` (default) the
        ensemble rows only.
    abstentions, unanimous, snap
        ``abstentions="drop"``, ``unanimous="abstain"`` and ``snap="option"`` give autorubric's
        behaviour (CANNOT_ASSESS/NA votes dropped before counting; a split unanimous vote
        abstains; means snap to the nearest of all options, voted or not); the defaults
        (``"vote"``, ``"lowest"``, ``"voted"``) are rubrictools' (see
        :mod:`rubrictools.grading.votes` and README's difference table).

    Returns
    -------
    polars.DataFrame
        One ``judge="ensemble"`` row per (submission, criterion) with the verdict table's
        columns, in first-seen submission order. Each row's ``distribution`` holds the votes'
        shares (by judge weight for ``weighted``/``weighted_mean``;
        ``distribution_source="votes"``), so ``rt.score(..., value="expected")`` scores the
        exact mean vote rather than the label the mean snapped to.

    Example
    -------
    Re-aggregating the judges' rows of a ``grade(model=[...])`` table this way costs no call:

    >>> import polars as pl, rubrictools as rt
    >>> r = rt.Rubric.from_dict([{"name": "q", "requirement": "x", "options": [
    ...     {"label": "lo", "value": 0}, {"label": "mid", "value": 0.5}, {"label": "hi", "value": 1}]}])
    >>> w = pl.DataFrame({"id": [1, 1], "criterion": "q", "verdict": ["lo", "hi"], "judge": ["x", "y"]})
    >>> rt.ensemble(w, r, method="mean")["verdict"].item()  # the voted label nearest 0.5: a tie, the lower
    'lo'
    >>> rt.ensemble(w, r, method="mean", snap="option")["verdict"].item()  # any option: 'mid' is 0.5
    'mid'
    >>> rt.ensemble(w, r, method="mean")["explanation"].item()
    'mean of 2 judges (mean 0.5): lo x1, hi x1'

    """
    if method not in AGGREGATIONS:
        raise ValueError(f"method must be one of {AGGREGATIONS}")
    rules = VoteRules(abstentions=abstentions, unanimous=unanimous, snap=snap)
    v = validate_verdicts(verdicts, rubric)
    if "judge" not in v.columns or v["judge"].null_count():
        raise ValueError("ensemble needs a 'judge' column naming the judge of every row")
    v = v.filter(pl.col("judge") != "ensemble")  # a grade(model=[...]) table's own ensemble rows are no judge
    if judges is not None:
        v = v.filter(pl.col("judge").is_in(judges))
    weights = {}
    for name, w in dict(judge_weights or {}).items():
        try:
            weights[name] = check_weight(w)
        except ValueError as e:
            raise ValueError(f"judge_weights[{name!r}]: {e}") from None
    unknown = set(weights) - set(v["judge"].unique().to_list())
    if unknown:
        raise ValueError(f"judge_weights name judges not in the table: {sorted(unknown)}")
    rows = (
        v.select(pl.col("id").unique(maintain_order=True))
        .with_row_index("__row")
        .with_columns(pl.col("__row").cast(pl.Int64))
    )
    votes = v.join(rows, on="id", how="left", maintain_order="left").with_columns(
        pl.col("judge").replace_strict(weights, default=1.0, return_dtype=pl.Float64).alias("judge_weight")
    )
    overrides = {c.name or "": str(c.aggregation) for c in rubric or () if c.aggregation}
    overrides.update(per_criterion or {})
    options = option_frame([rubric]) if rubric is not None else None
    agg = aggregate_votes(votes, overrides, method, options, rules).sort("__row", maintain_order=True)
    out = agg.select([*(c for c in VERDICT_SCHEMA if c in agg.columns), "distribution", "distribution_source"])
    # usage columns the votes never had (recorded judgments) stay unknown, not 0 / True
    unknown_usage = [
        c
        for c in ("prompt_tokens", "completion_tokens", "cost_usd", "cached", "attempts", "latency_s")
        if c in out.columns and v[c].null_count() == v.height
    ]
    out = out.with_columns([pl.lit(None, dtype=out.schema[c]).alias(c) for c in unknown_usage])
    if keep_votes:
        missing = [pl.lit(None, dtype=out.schema[c]).alias(c) for c in out.columns if c not in v.columns]
        return pl.concat([v.with_columns(missing).select(out.columns), out], how="vertical_relaxed")
    return out
