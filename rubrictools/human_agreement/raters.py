"""`inter_rater`: how well people agree among themselves (the ceiling a judge is held to)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.human_agreement.catalog import (
    INTER_RATER_METRICS,
    ORDERED_ONLY,
    Method,
    check_metrics,
    inapplicable_note,
    leave_out_or_refuse,
)
from rubrictools.human_agreement.estimate import evaluate_kernels, metric_rows, out_frame, resampling_plan
from rubrictools.human_agreement.labels import check_known, human_frame, label_table, with_key
from rubrictools.metrics import resampling as bs
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.kappa import (
    Weights,
    chance_corrected_from_unit_stats,
    kappa_from_confusion,
    unit_agreement_stats,
)
from rubrictools.metrics.multirater import alpha_from_stats, alpha_unit_stats, icc_from_stats, icc_unit_stats
from rubrictools.metrics.resampling import check_resampling
from rubrictools.rubric import Rubric

__all__ = ["inter_rater"]

_PAIRWISE_WEIGHTS: dict[str, Weights] = {"cohen_kappa_pairwise": None, "kappa_quadratic_pairwise": "quadratic"}
"""The mean-over-rater-pairs kappas and the disagreement weights of each."""


@adapted(renamed(bootstrap="n_resamples"))
def inter_rater(
    human: Any,
    rubric: Rubric | None = None,
    *,
    by: str | Sequence[str] | None = "criterion",
    metrics: Sequence[str] | None = None,
    n_resamples: int = 1000,
    ci: float = 0.95,
    method: Method = "percentile",
    seed: int | None = 0,
    stratify: Any = None,
) -> pl.DataFrame:
    """Agreement among human raters (the ceiling for a judge), per criterion.

    NA/CANNOT_ASSESS labels are treated as missing (where the criterion has them: a numeric
    one does not, so there leave the label null).

    Parameters
    ----------
    human
        The long label table ``id, criterion, label, rater``, with at least two raters
        (:func:`~rubrictools.labels_from_wide` makes it from a wide sheet).
    rubric
        Orders ordinal options and fixes the label set: every labelled criterion must be in it,
        and a label it does not allow (a typo, a number outside a numeric criterion's range or
        off its step) is refused. A numeric criterion is rated on its numbers, as an ordinal
        one (a stepped range on its grid). Without it, labels are inferred as binary, numeric
        or nominal.
    by
        Grouping of the rows: ``"criterion"`` (default), ``None`` (pool all criteria; they must
        share one label set), or a list of columns.
    metrics
        Subset of the metrics (default: all that apply): ``fleiss_kappa``, ``gwet_ac1``,
        ``percent_agreement`` (Gwet's forms, which allow a varying number of raters per
        submission), ``krippendorff_alpha`` (nominal for binary/nominal criteria, ordinal for
        ordinal ones; missing ratings allowed), ``cohen_kappa_pairwise`` (mean Cohen's kappa
        over rater pairs, each on the submissions both rated), ``kappa_quadratic_pairwise`` (the same
        with quadratic weights on the options' ranks, for ordinal criteria: the raters' counterpart
        of a judge's ``kappa_quadratic`` from :func:`rubrictools.agreement`; a pair with no
        submission in common, or with no spread to correct for, is left out of the mean, as for
        ``cohen_kappa_pairwise``) and, for ordinal criteria,
        ``icc2`` / ``icc3`` (ICC(2,1), ICC(3,1) on the submissions every rater rated; on a
        binary criterion only when asked for, on its 0/1 values). A metric asked for that
        does not apply to a group (an ordered one on nominal labels) is left out with a
        warning, or refused when nothing else is left.
    n_resamples, ci, method, seed, stratify
        The bootstrap's resamples of submissions (0: point estimates only); the interval level
        (written to the table's ``ci_level`` column); ``"percentile"`` or ``"bca"``; its seed
        (``0`` by default: identical calls give identical intervals; ``None`` draws afresh);
        optional strata (a label column name, or a DataFrame ``id, stratum``) to resample
        within.

    Returns
    -------
    polars.DataFrame
        Shaped as :func:`agreement`'s: one row per group and metric; ``n`` counts ratings,
        ``n_items`` submissions rated at least twice.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> h = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "criterion": "a", "rater": ["x", "y"] * 3,
    ...                   "label": ["MET", "MET", "UNMET", "UNMET", "MET", "UNMET"]})
    >>> t = rt.inter_rater(h, n_resamples=0)
    >>> round(t.filter(pl.col("metric") == "percent_agreement")["value"].item(), 4)
    0.6667
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    chosen = check_metrics(metrics, INTER_RATER_METRICS, "inter-rater")
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    h = with_key(human_frame(human), "label", "h_key")
    if h["rater"].n_unique() < 2:
        found = h["rater"].unique().to_list()
        raise ValueError(
            f"inter_rater compares raters with each other and found {len(found)} ({found}): the labels need a "
            "'rater' column with at least two raters"
        )
    keys = h.select("criterion", pl.col("h_key").alias("key")).unique()
    labels = label_table(rubric, keys, "exclude")
    h = h.join(
        labels.select(
            "criterion", pl.col("key").alias("h_key"), pl.col("code").alias("h_code"), pl.col("value").alias("h_value")
        ),
        on=["criterion", "h_key"],
        how="left",
    ).join(labels.group_by("criterion").agg(pl.col("kind", "n_classes").first()), on="criterion", how="left")
    if rubric is not None:
        bad = h.filter(pl.col("h_key").is_not_null() & pl.col("kind").is_null())
        if bad.height:
            raise ValueError(f"human labels: criterion {bad['criterion'][0]!r} is not in the rubric")
        check_known(h, "h_key", labels, "human labels", raw="label")
    n_missing = h.group_by(by_list or pl.lit(0).alias("__all")).agg(
        pl.col("h_code").is_null().sum().alias("n_excluded")
    )
    rated = h.filter(pl.col("h_code").is_not_null())
    plan = resampling_plan(rated["id"], n_resamples, seed, stratify, method, ci, human)
    rated = rated.join(plan.index, on="id", how="left")
    groups = rated.partition_by(by_list, as_dict=True, maintain_order=True) if by_list else {(): rated}
    excl = {tuple(r[:-1]): r[-1] for r in n_missing.iter_rows()}
    rows: list[dict[str, Any]] = []
    inapplicable: list[str] = []
    dtypes = {c: rated.schema[c] for c in by_list}
    for key, g in groups.items():
        key = key if isinstance(key, tuple) else (key,)
        if g["kind"].n_unique() != 1 or g["n_classes"].n_unique() != 1:
            raise ValueError("inter_rater: a group mixes criteria with different label sets; group by criterion")
        kind, k = g["kind"][0], int(g["n_classes"][0])
        names = chosen or [n for n in INTER_RATER_METRICS if kind == "ordinal" or n not in ORDERED_ONLY]
        # an ordered metric needs ordered labels: binary ones (0/1) when asked for, nominal never
        skip = [n for n in names if n in ORDERED_ONLY and kind != "ordinal" and (kind == "nominal" or not chosen)]
        if skip and chosen:
            inapplicable.append(inapplicable_note(skip, dict(zip(by_list, key, strict=False)), kind))
        names = [n for n in names if n not in skip]
        units = g.select("id", "__cluster").unique("id", maintain_order=True).with_row_index("__u")
        g = g.join(units.select("id", "__u"), on="id")
        u = g["__u"].to_numpy().astype(np.int64)
        n_units = units.height
        rmap = {r: i for i, r in enumerate(g["rater"].unique(maintain_order=True).to_list())}
        ri = g["rater"].replace_strict(rmap, return_dtype=pl.Int64).to_numpy()
        n_r = len(rmap)
        codes = np.full((n_units, n_r), -1, dtype=np.int64)
        codes[u, ri] = g["h_code"].to_numpy()
        vals = np.full((n_units, n_r), np.nan)
        vals[u, ri] = g["h_value"].to_numpy()
        counts = np.zeros((n_units, k))
        np.add.at(counts, (u, g["h_code"].to_numpy()), 1.0)
        kernels: list[bs.Kernel] = []
        gw = [n for n in names if n in ("fleiss_kappa", "gwet_ac1", "percent_agreement")]
        if gw:
            st = unit_agreement_stats(counts)
            kind_of = {"fleiss_kappa": "fleiss", "gwet_ac1": "ac1", "percent_agreement": "pa"}
            kernels.append(
                bs.Kernel(
                    tuple(gw),
                    lambda t, gw=gw, kind_of=kind_of: {n: chance_corrected_from_unit_stats(t, kind_of[n]) for n in gw},  # type: ignore[misc]  # mypy cannot infer a lambda with default-bound names
                    stats=st,
                )
            )
        if "krippendorff_alpha" in names:
            lvl = "ordinal" if kind == "ordinal" else "nominal"
            st = alpha_unit_stats(counts)
            dom = np.arange(k, dtype=float)
            kernels.append(
                bs.Kernel(
                    ("krippendorff_alpha",),
                    lambda t, lvl=lvl, dom=dom: {"krippendorff_alpha": alpha_from_stats(t, dom, lvl)},  # type: ignore[misc]  # mypy cannot infer a lambda with default-bound names
                    stats=st,
                )
            )
        pairwise = [n for n in names if n in _PAIRWISE_WEIGHTS]
        if pairwise and n_r >= 2:
            pairs = [(a, b) for a in range(n_r) for b in range(a + 1, n_r)]
            st = np.zeros((n_units, len(pairs) * k * k))
            for p, (a, b) in enumerate(pairs):
                both = (codes[:, a] >= 0) & (codes[:, b] >= 0)
                idx = np.flatnonzero(both)
                st[idx, p * k * k + codes[idx, a] * k + codes[idx, b]] = 1.0

            def pw(
                t: np.ndarray, n_pairs: int = len(pairs), k: int = k, which: list[str] = pairwise
            ) -> dict[str, np.ndarray]:
                cms = t.reshape(t.shape[0], n_pairs, k, k)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    return {n: np.nanmean(kappa_from_confusion(cms, _PAIRWISE_WEIGHTS[n]), axis=-1) for n in which}

            kernels.append(bs.Kernel(tuple(pairwise), pw, stats=st))
        icc_names = [n for n in names if n in ("icc2", "icc3")]
        if icc_names and n_r >= 2:
            complete = ~np.isnan(vals).any(1)
            st = icc_unit_stats(np.where(complete[:, None], vals, 0.0)) * complete[:, None]
            kernels.append(
                bs.Kernel(
                    tuple(icc_names),
                    lambda t, icc_names=icc_names: {n: icc_from_stats(t)["ICC" + n[-1]] for n in icc_names},  # type: ignore[misc]  # mypy cannot infer a lambda with default-bound names
                    stats=st,
                )
            )
        clusters = units["__cluster"].to_numpy()
        res = evaluate_kernels(kernels, clusters, plan) if n_r >= 2 else {}
        for n in names:
            res.setdefault(n, bs.Interval(float("nan")))
        n_items = int(((codes >= 0).sum(1) >= 2).sum())
        rows += metric_rows(
            dict(zip(by_list, key, strict=False)),
            names,
            res,
            {},
            g.height,
            n_items,
            int(excl.get(key if by_list else (0,), 0)),
            kind,
            plan.weights is not None,
        )
    leave_out_or_refuse(
        "inter_rater",
        inapplicable,
        computed=bool(rows),
        refuse="ordered metrics need ordinal labels",
        left_out="ordered metrics need ordered labels",
    )
    return with_ci_level(out_frame(rows, by_list, dtypes), ci)
