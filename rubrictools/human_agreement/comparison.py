"""`compare`: is judge A closer to people than judge B? A paired bootstrap of the difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.human_agreement.catalog import CRITERION_METRICS, SCORE, SCORE_METRICS, NaMode, Raters
from rubrictools.human_agreement.estimate import finite_or_none, resampling_plan
from rubrictools.human_agreement.kernels import criterion_kernels, score_kernels
from rubrictools.human_agreement.pairs import criterion_pairs, score_pairs
from rubrictools.metrics import resampling as bs
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_names, check_resampling
from rubrictools.rubric import Rubric

__all__ = ["compare"]


@adapted(renamed(bootstrap="n_resamples", na="cannot_assess"))
def compare(
    verdicts_a: Any,
    verdicts_b: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    metric: str = "cohen_kappa",
    level: Literal["criterion", "score"] | None = None,
    by: str | Sequence[str] | None = "criterion",
    names: tuple[str, str] = ("a", "b"),
    cannot_assess: NaMode = "exclude",
    raters: Raters = "each",
    n_resamples: int = 2000,
    ci: float = 0.95,
    seed: int | None = 0,
    stratify: Any = None,
) -> pl.DataFrame:
    """Paired bootstrap of the difference in one metric between two judges on the same items.

    Both verdict tables are paired with the same human labels, restricted to the pairs
    usable on both sides, and resampled with the *same* draws, so the interval of
    ``diff = value_a - value_b`` accounts for the correlation between the judges. The
    ``p_value`` (two-sided, H0: no difference) is the share of resampled differences at
    least as far from the observed one as the observed one is from 0:
    ``(1 + #{|d* - d| >= |d|}) / (B + 1)``.

    Parameters
    ----------
    verdicts_a, verdicts_b
        The two judges' verdict tables (``id, criterion, verdict``) on the same submissions;
        only the pairs usable on both sides are compared.
    human
        Human labels ``id, criterion, label[, rater]``, the same for both sides.
    rubric
        Orders ordinal options and fixes the label set (without it, labels are inferred as
        binary, numeric or nominal); needed to score both sides for a score-level ``metric``.
    metric
        The metric compared (default ``"cohen_kappa"``): a criterion-level metric
        (:data:`CRITERION_METRICS`) or, with ``metric`` in :data:`SCORE_METRICS` and a rubric, a
        score-level one.
    level
        ``"criterion"`` (verdicts against labels) or ``"score"`` (rubric scores against human
        scores; needs a rubric). ``None`` (default): score level for a metric only
        :data:`SCORE_METRICS` has (``pearson``, ``rmse``, ...), criterion level otherwise; say
        ``level="score"`` for ``spearman``, ``kendall`` or ``mae`` of the scores, which both
        lists have.
    by
        Grouping of the criterion-level rows, as in :func:`agreement`: ``"criterion"``
        (default), ``None`` (pool all criteria) or a list of columns. A score-level metric gives
        one row (criterion ``"__score__"`` when ``by`` includes ``"criterion"``).
    names
        Labels of the two sides (two different strings, default ``("a", "b")``); they name the
        ``value_<name>`` columns.
    cannot_assess
        CANNOT_ASSESS / NA labels: ``"exclude"`` (default), ``"as_category"`` (an extra class) or
        ``"as_worst"`` (the score-minimising option).
    raters
        ``"each"`` (default): every human rating is paired with the judge; ``"consensus"``: the
        majority label (median for ordinal, mean score), ties excluded.
    n_resamples, ci, seed, stratify
        Number of cluster-bootstrap resamples (0: point estimates only, interval and
        ``p_value`` null), the interval level (written to the table's ``ci_level`` column), the
        seed (``0`` by default: identical calls give identical intervals; ``None`` draws
        afresh), and optional strata (a human-label column name, or a DataFrame ``id, stratum``)
        to resample within.

    Returns
    -------
    polars.DataFrame
        One row per group: ``<by...>, metric, value_<a>, value_<b>, diff, ci_low, ci_high,
        ci_level, p_value, n`` (pairs), ``n_items`` (submissions) and ``n_degenerate``
        (resamples where the metric was undefined).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> h = pl.DataFrame({"id": range(6), "criterion": "a", "label": ["MET", "UNMET"] * 3})
    >>> a = h.rename({"label": "verdict"})
    >>> b = a.with_columns(pl.lit("MET").alias("verdict"))
    >>> rt.compare(a, b, h, metric="accuracy", n_resamples=200, seed=0)["diff"].item()
    0.5
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    check_names(names)
    if cannot_assess not in ("exclude", "as_category", "as_worst"):
        raise ValueError(f"cannot_assess must be 'exclude', 'as_category' or 'as_worst'; got {cannot_assess!r}")
    if raters not in ("each", "consensus"):
        raise ValueError(f"raters must be 'each' or 'consensus'; got {raters!r}")
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    if metric not in CRITERION_METRICS and metric not in SCORE_METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    if level not in (None, "criterion", "score"):
        raise ValueError(f"level must be 'criterion', 'score' or None; got {level!r}")
    score_level = metric not in CRITERION_METRICS if level is None else level == "score"
    if (metric not in SCORE_METRICS) if score_level else (metric not in CRITERION_METRICS):
        raise ValueError(f"metric {metric!r} is not a {level}-level metric; see CRITERION_METRICS and SCORE_METRICS")
    key_cols: list[str]
    if score_level:
        pa = score_pairs(verdicts_a, human, rubric, [], raters, None)
        pb = score_pairs(verdicts_b, human, rubric, [], raters, None)
        key_cols = ["id", "rater"]
        pa = pa.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        pb = pb.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        group_cols: list[str] = []
    else:
        pa = criterion_pairs(verdicts_a, human, rubric, by_list, cannot_assess, raters).frame
        pb = criterion_pairs(verdicts_b, human, rubric, by_list, cannot_assess, raters).frame
        key_cols = list(dict.fromkeys(["id", "criterion", "rater", *by_list]))
        group_cols = by_list
    common = pa.select(key_cols).join(pb.select(key_cols), on=key_cols, how="inner")
    if common.height == 0:
        raise ValueError(_nothing_paired(pa, pb, key_cols))
    pa = common.join(pa, on=key_cols, how="left", maintain_order="left")
    pb = common.join(pb, on=key_cols, how="left", maintain_order="left")
    plan = resampling_plan(common["id"], n_resamples, seed, stratify, "percentile", ci, human)
    pa = pa.join(plan.index, on="id", how="left", maintain_order="left")
    pb = pb.join(plan.index, on="id", how="left", maintain_order="left")
    ga = pa.partition_by(group_cols, as_dict=True, maintain_order=True) if group_cols else {(): pa}
    gb = pb.partition_by(group_cols, as_dict=True, maintain_order=True) if group_cols else {(): pb}
    rows = []
    for key, a in ga.items():
        b = gb[key]
        key = key if isinstance(key, tuple) else (key,)
        if score_level:
            ka = score_kernels(a["h_value"].to_numpy(), a["j_value"].to_numpy(), [metric])
            kb = score_kernels(b["h_value"].to_numpy(), b["j_value"].to_numpy(), [metric])
        else:
            kind, k, pos = a["kind"][0], int(a["n_classes"][0]), a["pos_code"][0]
            ka = criterion_kernels(a, kind, k, pos, [metric])
            kb = criterion_kernels(b, kind, k, pos, [metric])
        if not ka or not kb:
            raise ValueError(f"metric {metric!r} does not apply to group {dict(zip(group_cols, key, strict=False))}")
        clusters = a["__cluster"].to_numpy()
        va, vb = ka[0].point()[metric], kb[0].point()[metric]
        diff = va - vb
        low = high = p = float("nan")
        n_deg = None
        if plan.weights is not None:
            da = bs.evaluate(ka[0], clusters, plan.weights)[metric]
            db = bs.evaluate(kb[0], clusters, plan.weights)[metric]
            d = da - db
            iv = bs.interval(diff, d, ci=ci)
            low, high, n_deg = iv.low, iv.high, iv.n_degenerate
            p = bs.p_value(diff, d)
        group = dict(zip(group_cols, key, strict=False))
        if score_level and "criterion" in by_list:
            group["criterion"] = SCORE
        rows.append(
            {
                **group,
                "metric": metric,
                f"value_{names[0]}": finite_or_none(va),
                f"value_{names[1]}": finite_or_none(vb),
                "diff": finite_or_none(diff),
                "ci_low": finite_or_none(low),
                "ci_high": finite_or_none(high),
                "p_value": finite_or_none(p),
                "n": a.height,
                "n_items": a["id"].n_unique(),
                "n_degenerate": n_deg,
            }
        )
    schema: dict[str, Any] = {
        c: pl.String for c in (group_cols or (["criterion"] if score_level and "criterion" in by_list else []))
    }
    schema.update(
        {
            "metric": pl.String,
            f"value_{names[0]}": pl.Float64,
            f"value_{names[1]}": pl.Float64,
            "diff": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "p_value": pl.Float64,
            "n": pl.Int64,
            "n_items": pl.Int64,
            "n_degenerate": pl.Int64,
        }
    )
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return with_ci_level(out, ci)


def _nothing_paired(pa: pl.DataFrame, pb: pl.DataFrame, key_cols: list[str]) -> str:
    """Why two judges' pairs with the humans share no key: a column of ``by`` (e.g. each
    table's own ``judge``) that takes different values on each side, or no common item."""
    if pa.height == 0 or pb.height == 0:
        side = "verdicts_a" if pa.height == 0 else "verdicts_b"
        return f"compare: {side} has no verdict paired with a human label (check ids and criterion names)"
    for c in key_cols:
        va, vb = set(pa[c].unique().to_list()), set(pb[c].unique().to_list())
        if not va & vb:
            shown = f"{sorted(map(str, va))[:3]} vs {sorted(map(str, vb))[:3]}"
            hint = " (group by a column both tables share: each judge's name differs)" if c == "judge" else ""
            return f"compare: no pair in common: column {c!r} takes different values in the two tables, {shown}{hint}"
    return f"compare: the two verdict tables share no ({', '.join(key_cols)}) paired with a human label"
