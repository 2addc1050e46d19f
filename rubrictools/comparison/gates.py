"""`assert_score`: a quality gate for pytest and notebooks, passed only by a lower confidence bound."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.comparison.runs import judge_rows, open_run, with_values
from rubrictools.deprecation import adapted, renamed
from rubrictools.metrics import resampling as bs
from rubrictools.metrics.resampling import check_resampling, with_ci_level
from rubrictools.rubric import Rubric
from rubrictools.rubric.scoring import score

__all__ = ["assert_score"]

OnErrors = Literal["fail", "zero", "exclude"]


def _lower_bound(x: np.ndarray, ci: float, n_resamples: int, seed: int | None) -> float:
    """One-sided percentile bound: the ``1 - ci`` quantile of the bootstrap means."""
    w = bs.cluster_weights(x.size, n_resamples, seed=seed)
    return float(np.quantile(w @ x / x.size, 1 - ci))


def _criteria_table(v: pl.DataFrame, criteria: dict[str, float] | None) -> pl.DataFrame:
    """Each criterion's mean verdict value (1 = MET), worst first."""
    t = (
        v.filter(pl.col("error").is_null() if "error" in v.columns else pl.lit(True))
        .group_by("criterion", maintain_order=True)
        .agg(pl.col("value").mean().alias("mean"), pl.len().alias("n"))
        .sort("mean")
    )
    if criteria:
        missing = sorted(set(criteria) - set(t["criterion"]))
        if missing:
            raise ValueError(f"criteria {missing} are not in the verdict table (criteria: {t['criterion'].to_list()})")
    return t


@adapted(renamed(bootstrap="n_resamples", confidence="ci", errors="on_error"))
def assert_score(
    verdicts: Any,
    rubric: Rubric | None = None,
    *,
    at_least: float,
    ci: float = 0.95,
    criteria: dict[str, float] | None = None,
    on_error: OnErrors = "fail",
    judge: str | None = None,
    root: Any = None,
    n_resamples: int = 2000,
    seed: int | None = 0,
) -> pl.DataFrame:
    """Pass only when the mean score is at least ``at_least`` with confidence ``ci``.

    The gate is the one-sided lower confidence bound of the mean of
    :func:`rubrictools.score` over submissions (the ``1 - ci`` percentile of
    ``n_resamples`` resampled means, drawn with ``seed``): a mean of 0.82 on 20 submissions may
    well not clear 0.8. In pytest it is a plain assertion; in a notebook run by
    ``pytest --nbmake`` the failing cell fails the notebook.

    Parameters
    ----------
    verdicts
        A verdict table, a :class:`~rubrictools.records.Run` or a recorded run's id (the run's
        own rubric is then used).
    rubric
        The rubric to score with (overrides a recorded run's); without one, a verdict table's
        own ``value`` and ``weight`` columns are used.
    at_least
        The bar the mean score's lower bound must reach, between 0 and 1.
    ci
        The confidence of the one-sided bound (default 0.95; written to the table's
        ``ci_level`` column).
    criteria
        Gates on criteria (``{"correct": 0.9}``), bounded the same way: the share of verdicts
        MET, or for a penalty or disqualifier of the rubric the share **not** met (the share
        that is good for the score: ``{"rude": 0.95}`` asks that at least 95% of answers are not
        rude; its row reads ``rude (avoided)``). Without a rubric the table's negative
        ``weight`` marks the penalties, as :func:`rubrictools.score` reads them.
    on_error
        A submission with a failed judge call makes the gate fail (``"fail"``, default: an
        outage is not a pass), scores 0 (``"zero"``) or is left out (``"exclude"``).
    judge
        Which judge's rows to score when the table holds several (default: the ensemble rows
        when present), as in :func:`rubrictools.score`.
    root
        The run store to look a run id up in (``None``: where ``record=True`` writes).
    n_resamples, seed
        The bootstrap's resamples of submissions (at least 1) and its seed (``0`` by default:
        identical calls give identical bounds; ``None`` draws afresh).

    Returns
    -------
    polars.DataFrame
        The table of gates when all pass: ``gate, mean, lower_bound, ci_level, at_least, n,
        passed``, one row for the mean score and one per gated criterion.

    Raises
    ------
    AssertionError
        When a gate fails, naming the figures and the criteria that help the score least.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    >>> v = pl.DataFrame({"id": range(40), "criterion": "greets", "verdict": "MET", "value": 1.0})
    >>> rt.assert_score(v, rub, at_least=0.9)["passed"].to_list()
    [True]
    >>> half = v.with_columns(verdict=pl.Series(["MET", "UNMET"] * 20), value=pl.Series([1.0, 0.0] * 20))
    >>> rt.assert_score(half, rub, at_least=0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: score gate failed: mean score 0.5 on 40 submissions, 95% bootstrap lower bound 0.375 < 0.5...
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed, least=2)  # the gate is a bound: it needs resamples
    bars = {"at_least": at_least, **{f"criteria[{k!r}]": x for k, x in (criteria or {}).items()}}
    for name, bar in bars.items():
        if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 <= bar <= 1:
            raise ValueError(f"{name} must be a score between 0 and 1, got {bar!r}")
    if on_error not in ("fail", "zero", "exclude"):
        raise ValueError(f"on_error must be 'fail', 'zero' or 'exclude'; got {on_error!r}")
    v, recorded, _ = open_run(verdicts, root)
    rub = rubric if rubric is not None else (Rubric.from_dict(recorded) if recorded is not None else None)
    v = with_values(judge_rows(v, judge), rub)
    s = score(v, rub, on_error="null")
    failed = s.filter(pl.col("score").is_null())
    if failed.height and on_error == "fail":
        raise AssertionError(
            f"score gate failed: {failed.height} of {s.height} submissions have failed judge calls "
            f"(ids {failed['id'].head(5).to_list()}...): re-run them (the cache keeps the rest), or pass "
            "on_error='zero' / 'exclude'"
        )
    x = s["score"].fill_null(0.0) if on_error == "zero" else s["score"].drop_nulls()
    arr = x.to_numpy().astype(float)
    if arr.size == 0:
        raise AssertionError("score gate failed: no scored submission")
    table = _criteria_table(v, criteria)
    rows = [("mean score", float(arr.mean()), _lower_bound(arr, ci, n_resamples, seed), at_least, arr.size)]
    if rub is not None:
        penalties = {c.name for c in rub.criteria if c.weight < 0 or c.disqualifier}
    else:  # the table's own weights say which criteria are penalties, as score reads them
        penalties = set(v.filter(pl.col("weight") < 0)["criterion"].to_list()) if "weight" in v.columns else set()
    for name, floor in (criteria or {}).items():
        vals = v.filter((pl.col("criterion") == name) & pl.col("value").is_not_null())["value"].to_numpy()
        vals = 1.0 - vals.astype(float) if name in penalties else vals.astype(float)  # a penalty: the share avoided
        label = f"{name} (avoided)" if name in penalties else name
        rows.append((label, float(vals.mean()), _lower_bound(vals, ci, n_resamples, seed), floor, vals.size))
    gates = pl.DataFrame(rows, schema=["gate", "mean", "lower_bound", "at_least", "n"], orient="row").with_columns(
        (pl.col("lower_bound") >= pl.col("at_least")).alias("passed")
    )
    gates = with_ci_level(gates, ci, after="lower_bound")  # a one-sided bound at this level
    if gates["passed"].all():
        return gates
    pct = f"{ci:.0%}"
    why = "; ".join(_failed(g, pct) for g in gates.filter(~pl.col("passed")).iter_rows(named=True))
    # a penalty is good for the score when UNMET: rank by the share of verdicts that help it
    good = pl.when(pl.col("criterion").is_in(list(penalties))).then(1 - pl.col("mean")).otherwise(pl.col("mean"))
    credit = table.with_columns(good.alias("mean")).sort("mean")
    worst = ", ".join(f"{r['criterion']} {r['mean']:.2%}" for r in credit.head(3).iter_rows(named=True))
    raise AssertionError(
        f"score gate failed: {why}. Criteria that help the score least (share of verdicts good for it: MET, or UNMET "
        f"for a penalty): {worst}"
    )


def _failed(gate: dict[str, Any], pct: str) -> str:
    """One failed gate in words: the mean score as a score, a criterion's share as a percentage
    (two decimals, as a share of tens of verdicts needs: 51 of 80 is 63.75%, which one decimal would
    print as a "63.7%" that reads as mis-rounded)."""
    if gate["gate"] == "mean score":
        bound = f"{pct} bootstrap lower bound {gate['lower_bound']:.3g}"
        figures = f"{gate['mean']:.3g} on {gate['n']} submissions, {bound}"
        return f"mean score {figures} < {gate['at_least']:.3g}"
    figures = f"{gate['mean']:.2%} on {gate['n']} verdicts, {pct} bootstrap lower bound {gate['lower_bound']:.2%}"
    return f"{gate['gate']} {figures} < {100 * gate['at_least']:.4g}%"
