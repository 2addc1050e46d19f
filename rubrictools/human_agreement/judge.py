"""`agreement`: how well a judge agrees with people, per criterion and on the rubric score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.frames import to_polars
from rubrictools.human_agreement.catalog import (
    CRITERION_METRICS,
    DEFAULT_METRICS,
    OPT_IN,
    PVALUE,
    SCORE,
    SCORE_METRICS,
    Level,
    Method,
    NaMode,
    Raters,
    check_metrics,
    inapplicable_note,
    leave_out_or_refuse,
)
from rubrictools.human_agreement.estimate import evaluate_kernels, metric_rows, out_frame, resampling_plan
from rubrictools.human_agreement.kernels import criterion_kernels, pvalues, score_kernels
from rubrictools.human_agreement.labels import human_frame, warn_pooled_judges
from rubrictools.human_agreement.pairs import criterion_pairs, score_pairs
from rubrictools.metrics import resampling as bs
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling
from rubrictools.rubric import Rubric

__all__ = ["agreement"]


@adapted(renamed(bootstrap="n_resamples", na="cannot_assess"))
def agreement(
    verdicts: Any,
    human: Any,
    rubric: Rubric | None = None,
    *,
    by: str | Sequence[str] | None = "criterion",
    level: Level | None = None,
    metrics: Sequence[str] | None = None,
    raters: Raters = "each",
    cannot_assess: NaMode = "exclude",
    human_scores: Any = None,
    n_resamples: int = 1000,
    ci: float = 0.95,
    method: Method = "percentile",
    seed: int | None = 0,
    stratify: Any = None,
) -> pl.DataFrame:
    """Agreement of the judge with human labels, per criterion and on the rubric score.

    Parameters
    ----------
    verdicts
        A verdict table (``id, criterion, verdict``; ``error`` rows are excluded and
        counted), or a score table (``id, score``) for score-level agreement only.
    human
        Human labels ``id, criterion, label[, rater]`` (or a score table ``id, score[, rater]``).
    rubric
        Orders ordinal options, fixes the label set (a label it does not allow is refused),
        and scores both sides for the score-level rows. A numeric criterion is compared on its
        numbers as an ordinal one (``mae`` in the rating's own units). Without
        it, labels are inferred as binary, numeric or nominal.
    by
        Grouping of the criterion-level rows: ``"criterion"`` (default), ``None`` (pool all
        criteria; they must share one label set), or a list such as ``["judge", "criterion"]``.
    level
        ``"criterion"``, ``"score"`` or ``"both"`` (default: both when a rubric is given).
    metrics
        Subset of :data:`CRITERION_METRICS` and :data:`SCORE_METRICS`; default by kind:
        binary -> accuracy, precision, recall, f1, mcc, cohen_kappa, gwet_ac1, judge_rate and
        human_rate (MET rates; ``MET`` is the positive class); ordinal -> accuracy,
        cohen_kappa, kappa_linear, kappa_quadratic, spearman, kendall, mae, js_divergence (of
        the two label distributions); nominal -> accuracy, f1_macro, cohen_kappa, gwet_ac1,
        js_divergence; score -> all of :data:`SCORE_METRICS` but ``rmse_affine`` (the RMSE
        floor left after the best affine rescaling of the judge's scores; ask for it by name).
    raters
        ``"each"``: every human rating is paired with the judge (clusters keep a submission's
        raters together); ``"consensus"``: the majority label (median for ordinal, mean
        score), ties excluded.
    cannot_assess
        CANNOT_ASSESS / NA labels: ``"exclude"`` (default, counted in ``n_excluded``),
        ``"as_category"`` (an extra class) or ``"as_worst"`` (the score-minimising option).
    n_resamples, ci, method, seed, stratify
        Number of cluster-bootstrap resamples (0: point estimates only), interval level,
        ``"percentile"`` or ``"bca"``, seed (``0`` by default: identical calls give identical
        intervals; ``None`` draws afresh each call), and optional strata (a human-label column name,
        or a DataFrame ``id, stratum``) to resample within.

    Returns
    -------
    polars.DataFrame
        One row per group and metric: ``<by...>, metric, value, ci_low, ci_high, p_value,
        n`` (pairs), ``n_items`` (submissions), ``n_excluded``, ``n_degenerate`` (resamples
        where the metric was undefined), ``kind``. Score-level rows have criterion
        ``"__score__"`` (:data:`SCORE`).

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> v = pl.DataFrame({"id": [1, 2, 3, 4], "criterion": "a", "verdict": ["MET", "MET", "UNMET", "UNMET"]})
    >>> h = pl.DataFrame({"id": [1, 2, 3, 4], "criterion": "a", "label": ["MET", "UNMET", "UNMET", "UNMET"]})
    >>> t = rt.agreement(v, h, n_resamples=0)
    >>> t.filter(pl.col("metric") == "accuracy").select("criterion", "value", "n").row(0)
    ('a', 0.75, 4)
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed)
    if cannot_assess not in ("exclude", "as_category", "as_worst"):
        raise ValueError(f"cannot_assess must be 'exclude', 'as_category' or 'as_worst'; got {cannot_assess!r}")
    if raters not in ("each", "consensus"):
        raise ValueError("raters must be 'each' or 'consensus'")
    by_list = [] if by is None else ([by] if isinstance(by, str) else list(by))
    vf = to_polars(verdicts, name="verdicts")
    score_only = "score" in vf.columns and "criterion" not in vf.columns
    if level is None:
        level = "score" if score_only else ("both" if rubric is not None or human_scores is not None else "criterion")
    if level not in ("criterion", "score", "both"):
        raise ValueError("level must be 'criterion', 'score' or 'both'")
    chosen = check_metrics(metrics, (*CRITERION_METRICS, *SCORE_METRICS), "agreement")
    if human is not None and level in ("criterion", "both"):
        human = human_frame(human)  # checked once, so each of its warnings is given once
    if "judge" not in by_list:
        warn_pooled_judges(vf)  # once, here: criterion and score pairs would each say it

    pairs = None
    inapplicable: list[str] = []
    if level in ("criterion", "both"):
        if score_only:
            raise ValueError("criterion-level agreement needs a verdict table, not a score table")
        pairs = criterion_pairs(vf, human, rubric, by_list, cannot_assess, raters)
    score_by = [c for c in by_list if c not in ("criterion",)]
    spairs = None
    if level in ("score", "both"):
        if [c for c in score_by if c != "judge"]:
            raise ValueError("score-level agreement can be grouped by 'judge' only")
        spairs = score_pairs(vf, human, rubric, score_by, raters, human_scores)

    id_parts = []
    if pairs is not None:
        id_parts.append(pairs.frame.select("id"))
    if spairs is not None:
        id_parts.append(spairs.select("id"))
    ids = pl.concat(id_parts)["id"] if id_parts else pl.Series("id", [])
    plan = resampling_plan(ids, n_resamples, seed, stratify, method, ci, human)
    rows: list[dict[str, Any]] = []
    dtypes: dict[str, pl.DataType] = {}

    if pairs is not None:
        frame = pairs.frame.join(plan.index, on="id", how="left")
        dtypes = {c: frame.schema[c] for c in by_list if c in frame.columns}
        excl = (
            {tuple(r[:-1]): r[-1] for r in pairs.excluded.iter_rows()}
            if by_list
            else {(): int(pairs.excluded["n_excluded"].sum())}
        )
        groups = frame.partition_by(by_list, as_dict=True, maintain_order=True) if by_list else {(): frame}
        seen = set()
        for key, g in groups.items():  # a metric asked for that does not apply to a group's labels is said so
            key = key if isinstance(key, tuple) else (key,)
            seen.add(key)
            kinds = g["kind"].unique().to_list()
            if len(kinds) != 1 or g["n_classes"].n_unique() != 1:
                raise ValueError(
                    f"group {dict(zip(by_list, key, strict=False))} mixes criteria with different label "
                    f"sets; group by criterion"
                )
            kind, k = kinds[0], int(g["n_classes"][0])
            pos = g["pos_code"][0]
            if by_list == [] and g["criterion"].n_unique() > 1 and g["classes"].n_unique() > 1:
                raise ValueError("by=None pools criteria, which must share one label set")
            names = chosen if chosen is not None else list(DEFAULT_METRICS[kind])
            names = [n for n in names if n in CRITERION_METRICS]
            kernels = criterion_kernels(g, kind, k, pos, names)
            res = evaluate_kernels(kernels, g["__cluster"].to_numpy(), plan)
            if chosen is not None and (skipped := [n for n in names if n not in res]):
                inapplicable.append(inapplicable_note(skipped, dict(zip(by_list, key, strict=False)), kind))
            # p-values only for the metrics that were computed (e.g. no rank tests on nominal labels)
            pv = pvalues(
                [n for n in names if n in PVALUE and n in res],
                g["h_code"].to_numpy(),
                g["j_code"].to_numpy(),
                labels=list(range(k)),
            )
            group = dict(zip(by_list, key, strict=False))
            rows += metric_rows(
                group,
                names,
                res,
                pv,
                g.height,
                g["id"].n_unique(),
                int(excl.get(key, 0)),
                kind,
                plan.weights is not None,
            )
        for key, n_ex in excl.items():  # groups with no usable pair at all
            if key not in seen and n_ex:
                rows += metric_rows(
                    dict(zip(by_list, key, strict=False)),
                    ["accuracy"],
                    {"accuracy": bs.Interval(float("nan"))},
                    {},
                    0,
                    0,
                    int(n_ex),
                    "",
                    False,
                )

    if spairs is not None:
        sframe = spairs.join(plan.index, on="id", how="left")
        usable = sframe.filter(pl.col("h_value").is_not_null() & pl.col("j_value").is_not_null())
        names = [n for n in chosen if n in SCORE_METRICS] if chosen else [n for n in SCORE_METRICS if n not in OPT_IN]
        sgroups = usable.partition_by(score_by, as_dict=True, maintain_order=True) if score_by else {(): usable}
        for key, g in sgroups.items():
            key = key if isinstance(key, tuple) else (key,)
            hs, js = g["h_value"].to_numpy(), g["j_value"].to_numpy()
            res = evaluate_kernels(score_kernels(hs, js, names), g["__cluster"].to_numpy(), plan)
            pv = pvalues([n for n in names if n in PVALUE], hs, js)
            group = dict(zip(score_by, key, strict=False))
            if "criterion" in by_list:
                group["criterion"] = SCORE
            n_ex = (
                sframe.height - usable.height
                if not score_by
                else sframe.filter(
                    pl.all_horizontal([pl.col(c) == v for c, v in zip(score_by, key, strict=False)])
                ).height
                - g.height
            )
            rows += metric_rows(
                group, names, res, pv, g.height, g["id"].n_unique(), n_ex, "score", plan.weights is not None
            )
    leave_out_or_refuse(
        "agreement",
        inapplicable,
        computed=any(r.get("metric") in (chosen or ()) for r in rows),
        refuse="see the metrics of each label kind",
        left_out="they do not apply to those labels",
    )
    out_by = by_list if (pairs is not None or "criterion" in by_list) else score_by
    return with_ci_level(out_frame(rows, out_by, dtypes), ci)
