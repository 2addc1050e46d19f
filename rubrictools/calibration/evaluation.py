"""Is a calibrator better than the raw judge? Cross-validation, nested tuning and held-out evaluation."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.calibration.fitting import Examples, check_binary, examples, fit, fit_examples
from rubrictools.calibration.model import Calibrator, Model, all_numeric, codes, dist_frame, targets
from rubrictools.calibration.workers import check_n_jobs, run_jobs
from rubrictools.deprecation import adapted, renamed
from rubrictools.human_agreement import agreement
from rubrictools.metrics.errors import rmse as _rmse
from rubrictools.metrics.resampling import check_resampling
from rubrictools.progress import progress_bar

__all__ = ["DEFAULT_GRID", "REPORT_METRICS", "cross_validate", "evaluate", "tune"]


REPORT_METRICS: tuple[str, ...] = ("rmse", "rmse_affine", "pearson", "spearman", "kendall")
"""Metrics of :func:`cross_validate` and :func:`evaluate` (``rmse_affine``: the RMSE floor
left after the best affine rescaling of a method's predictions, ``s_human * sqrt(1 - r^2)``)."""


DEFAULT_GRID: dict[str, tuple[float, ...]] = {"l2_rater": (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)}
"""What :func:`tune` searches by default: the rater-specific penalty, which matters most."""


def _predict_rows(cal: Calibrator, ex: Examples, rows: np.ndarray, per_rater: bool) -> pl.DataFrame:
    """``id, rater, _occ, label, calibrated, known_rater, p_true`` for the examples ``rows``
    (``p_true``: the probability given to the human's label; unknown raters get the
    average-rater prediction)."""
    r = codes(ex.rater[rows], cal.raters) if per_rater else np.full(rows.size, -1)
    probs = cal.probabilities(ex.x[rows], r)
    numeric = all_numeric(cal.labels)
    expected = probs @ np.array([float(v) for v in cal.labels]) if numeric else np.full(rows.size, np.nan)
    truth = codes(ex.label[rows], cal.labels)
    p_true = np.where(truth >= 0, probs[np.arange(rows.size), truth.clip(0)], 0.0)
    return ex.table[rows].with_columns(
        pl.Series("calibrated", expected, dtype=pl.Float64).fill_nan(None),
        pl.Series("known_rater", r >= 0),
        pl.Series("p_true", p_true, dtype=pl.Float64),
    )


def _report(
    d: pl.DataFrame, t: pl.DataFrame, preds: pl.DataFrame, target: str, n_resamples: int, seed: int | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Metrics of the calibrated predictions and the judge's own baselines against ``t``."""

    judge = d.filter(pl.col("criterion") == target).with_columns(
        pl.col("label").cast(pl.Float64, strict=False).alias("v")
    )
    ev = judge.group_by("id").agg(
        (pl.col("v") * pl.col("prob")).sum().alias("expected"), pl.col("v").sort_by("prob").last().alias("argmax")
    )
    table = (
        t.select("id", "rater", "_occ", pl.col("label").cast(pl.Float64).alias("human"))
        .join(preds.drop("label"), on=["id", "rater", "_occ"], how="inner")
        .join(ev, on="id", how="left")
        .drop("_occ")
    )
    rows = []
    human_scores = table.select("id", "rater", pl.col("human").alias("score"))
    for method in ("calibrated", "expected", "argmax"):
        judge_scores = table.select("id", "rater", pl.col(method).alias("score"))
        a = agreement(judge_scores, human_scores, metrics=list(REPORT_METRICS), n_resamples=n_resamples, seed=seed)
        rows.append(a.with_columns(pl.lit(method).alias("method")))
    metrics = pl.concat(rows).select("method", "metric", "value", "ci_low", "ci_high", "n", "n_items")
    return metrics, table


def _require_numeric(labels: Sequence[str], target: str) -> None:
    if not all_numeric(labels):
        raise ValueError(
            f"{target!r} has non-numeric labels {sorted(labels)}: RMSE and correlations need numeric labels"
        )


def _folds(ex: Examples, rows: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The fold of each of ``rows``: submissions shuffled by ``seed``, then dealt round-robin."""
    ids = ex.table["id"][rows]
    uniq = ids.unique(maintain_order=True)
    if folds < 2 or folds > uniq.len():
        raise ValueError(f"folds must be between 2 and the number of labelled submissions ({uniq.len()}); got {folds}")
    dealt = pl.DataFrame({"id": uniq, "_fold": np.random.default_rng(seed).permutation(uniq.len()) % folds})
    return ids.to_frame().join(dealt, on="id", how="left", maintain_order="left")["_fold"].to_numpy()


_PENALTIES = ("l2", "l2_rater", "anchor", "max_iter")


def _fit_settings(**given: Any) -> dict[str, Any]:
    """The :func:`fit` settings given (None: fit's default; the default ``model`` is not a
    setting given, so a grid may still search it)."""
    return {k: v for k, v in given.items() if v is not None and not (k == "model" and v == "multinomial")}


def _settings(fit_kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``fit_kwargs`` split into what shapes the examples (``features``, ``model``) and what
    each fit on them takes (``model`` and the penalties)."""
    unknown = set(fit_kwargs) - {"features", "model", *_PENALTIES}
    if unknown:
        raise TypeError(f"unexpected fit() settings {sorted(unknown)}")
    shape = {k: v for k, v in fit_kwargs.items() if k in ("features", "model")}
    return shape, {k: v for k, v in fit_kwargs.items() if k in ("model", *_PENALTIES)}


def _checked_grid(grid: Mapping[str, Sequence[float]], fixed: dict[str, Any]) -> dict[str, tuple[float, ...]]:
    """``grid`` as tuples, refused when empty, naming no penalty, clashing with a fixed setting
    or holding a value no fit takes (a negative or non-finite penalty, a max_iter below 1)."""
    values = {k: tuple(v) for k, v in grid.items()}
    if not values or any(len(v) == 0 for v in values.values()):
        raise ValueError("grid must map fit() keywords to non-empty lists of values")
    unknown = set(values) - set(_PENALTIES)
    if unknown:
        raise ValueError(f"grid searches the penalties {list(_PENALTIES)}; got {sorted(unknown)}")
    clash = set(values) & set(fixed)
    if clash:
        raise ValueError(f"{sorted(clash)} are both in grid and passed as fixed settings")
    for name, candidates in values.items():
        for v in candidates:
            number = isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
            if not number or not math.isfinite(v) or v < 0 or (name == "max_iter" and (v < 1 or v != int(v))):
                want = "a whole number of at least 1" if name == "max_iter" else "a finite number >= 0"
                raise ValueError(f"grid[{name!r}]: {v!r} is not {want}")
    return values


def _fold_part(
    ex: Examples,
    train: np.ndarray,
    test: np.ndarray,
    target: str,
    init: Calibrator | None,
    per_rater: bool,
    fit_kwargs: dict[str, Any],
) -> pl.DataFrame:
    """Predictions for the examples ``test`` from a calibrator fitted on ``train`` (one job)."""
    cal = fit_examples(ex, train, target=target, init=init, **fit_kwargs)
    return _predict_rows(cal, ex, test, per_rater)


def _search(
    ex: Examples,
    rows: np.ndarray,
    *,
    target: str,
    grid: dict[str, tuple[float, ...]],
    folds: int,
    seed: int,
    metric: str,
    per_rater: bool,
    init: Calibrator | None,
    fit_kwargs: dict[str, Any],
    bar: Any = None,
    n_jobs: int | None = None,
) -> tuple[dict[str, float], pl.DataFrame]:
    """:func:`tune` on the examples ``rows``: each combination's held-out predictions by
    ``folds``-fold cross-validation, one job per (combination, fold). (Warm-starting each fold
    from the previous combination's fit saved 20% but made a combination's score depend,
    within the optimiser's tolerance, on the grid around it: not done.)"""
    fold = _folds(ex, rows, folds, seed)
    numeric = all_numeric(np.unique(ex.label[rows]).tolist())
    combos = [dict(zip(grid, values, strict=False)) for values in itertools.product(*grid.values())]
    jobs = [
        (ex, rows[fold != k], rows[fold == k], target, init, per_rater, {**fit_kwargs, **combo})
        for combo in combos
        for k in range(folds)
    ]
    parts = run_jobs(_fold_part, jobs, n_jobs=n_jobs, done=None if bar is None else lambda: bar.update(1))
    out = []
    for i, combo in enumerate(combos):
        pred = pl.concat(parts[i * folds : (i + 1) * folds])
        rmse = _rmse(pred["label"].cast(pl.Float64).to_numpy(), pred["calibrated"].to_numpy()) if numeric else None
        log_loss = float(-np.log(np.clip(pred["p_true"].to_numpy(), 1e-15, None)).mean())
        out.append({**combo, "rmse": rmse, "log_loss": log_loss, "n": pred.height})
    scores = pl.DataFrame(out, schema_overrides={"rmse": pl.Float64})
    at = int(np.argmin(scores[metric].to_numpy()))
    best = {k: float(scores[k][at]) for k in grid}
    return best, scores.with_columns((pl.int_range(pl.len()) == at).alias("best"))


def _outer_part(
    ex: Examples,
    train: np.ndarray,
    test: np.ndarray,
    k: int,
    grid: dict[str, tuple[float, ...]] | None,
    tune_folds: int,
    seed: int,
    target: str,
    per_rater: bool,
    base: Calibrator | None,
    fit_kwargs: dict[str, Any],
) -> pl.DataFrame:
    """Outer fold ``k`` of :func:`cross_validate` (one job): the penalties searched on ``train``
    alone when there is a grid, then its predictions of ``test``."""
    chosen: dict[str, float] = {}
    if grid is not None:
        inner = min(tune_folds, ex.table["id"][train].n_unique())
        chosen, _ = _search(
            ex,
            train,
            target=target,
            grid=grid,
            folds=inner,
            seed=seed,
            metric="rmse",
            per_rater=per_rater,
            init=base,
            fit_kwargs=fit_kwargs,
        )
    part = _fold_part(ex, train, test, target, base, per_rater, {**fit_kwargs, **chosen})
    return part.with_columns(
        pl.lit(k, dtype=pl.Int64).alias("fold"),  # so a baseline can be fitted on the very same folds
        *[pl.lit(v, dtype=pl.Float64).alias(n) for n, v in chosen.items()],
    )


def tune(
    distributions: Any,
    human: Any,
    *,
    target: str,
    grid: dict[str, Sequence[float]] | None = None,
    folds: int = 5,
    seed: int = 0,
    metric: Literal["rmse", "log_loss"] | None = None,
    per_rater: bool = True,
    init: Calibrator | None = None,
    progress: bool = True,
    n_jobs: int | None = None,
    features: list[str] | None = None,
    model: Model = "multinomial",
    l2: float | None = None,
    l2_rater: float | None = None,
    anchor: float | None = None,
    max_iter: int | None = None,
) -> tuple[dict[str, float], pl.DataFrame]:
    """Choose :func:`fit` settings by K-fold cross-validation (by submission) over a grid.

    ``grid`` maps :func:`fit` keywords to candidate values (default :data:`DEFAULT_GRID`);
    every combination is scored on held-out labels by ``metric``: ``"rmse"`` of the expected
    label (the default for numeric labels) or ``"log_loss"``, the mean ``-log p`` of the
    human's label (the default otherwise). Returns ``(best, scores)``: the best combination
    (first on ties) and one row per combination with ``rmse`` (null for non-numeric labels),
    ``log_loss``, ``n`` and ``best``. ``init`` fine-tunes from a fitted calibrator, as in
    :func:`fit`. :func:`cross_validate` with ``tune=True`` runs this inside each training
    fold, so its figures stay held out. ``progress`` shows a progress bar (one step per fold
    of each combination). ``n_jobs``: worker processes for the fits (None or 1: none; ``k``:
    ``k``, at most one per CPU; -1: one per CPU, -2: all but one); the results equal a serial
    run's. Workers start by importing the library (about a second each) and then stay for five
    idle minutes, so they pay with many fits (a 5-fold search of 25 combinations takes about as
    long either way on two CPUs, the first call longer) or when a nested
    :func:`cross_validate` follows. ``features``, ``model``, ``l2``, ``l2_rater``, ``anchor`` and
    ``max_iter`` are fixed :func:`fit` settings (None: fit's default, or the grid's values).

    >>> import polars as pl
    >>> d = pl.DataFrame({"id": [i for i in range(8) for _ in "12"], "criterion": "q", "label": ["1", "2"] * 8,
    ...                   "prob": [0.8, 0.2, 0.3, 0.7] * 4})
    >>> h = pl.DataFrame({"id": range(8), "criterion": "q", "rater": "a", "label": [1, 2] * 4})
    >>> best, scores = tune(d, h, target="q", grid={"l2": [1e-3, 1.0]}, folds=2, progress=False)
    >>> best, scores["best"].to_list()
    ({'l2': 0.001}, [True, False])
    """
    fit_kwargs = _fit_settings(
        features=features, model=model, l2=l2, l2_rater=l2_rater, anchor=anchor, max_iter=max_iter
    )
    workers = check_n_jobs(n_jobs, stacklevel=2)  # the caller's line
    values = _checked_grid(grid or DEFAULT_GRID, fit_kwargs)
    shape, per_fit = _settings(fit_kwargs)
    ex = examples(distributions, human, target=target, init=init, **shape)
    if ex.n == 0:
        raise ValueError(f"no human labels on {target!r} for the submissions in distributions")
    check_binary(model, sorted(set(ex.label.tolist())), target)
    numeric = all_numeric(np.unique(ex.label).tolist())
    metric = metric or ("rmse" if numeric else "log_loss")
    if metric not in ("rmse", "log_loss") or (metric == "rmse" and not numeric):
        raise ValueError("metric must be 'log_loss', or 'rmse' for numeric labels")
    bar = progress_bar(math.prod(map(len, values.values())) * folds, enabled=progress, desc="tuning", unit="fold")
    try:
        return _search(
            ex,
            np.arange(ex.n),
            target=target,
            grid=values,
            folds=folds,
            seed=seed,
            metric=metric,
            per_rater=per_rater,
            init=init,
            fit_kwargs=per_fit,
            bar=bar,
            n_jobs=workers,
        )
    finally:
        if bar is not None:
            bar.close()


@adapted(renamed(bootstrap="n_resamples"))
def cross_validate(
    distributions: Any,
    human: Any,
    *,
    target: str,
    folds: int = 10,
    seed: int = 0,
    pretrain: tuple[Any, Any] | None = None,
    n_resamples: int = 1000,
    per_rater: bool = True,
    tune: bool | dict[str, Sequence[float]] = False,
    tune_folds: int = 5,
    progress: bool = True,
    n_jobs: int | None = None,
    features: list[str] | None = None,
    model: Model = "multinomial",
    l2: float | None = None,
    l2_rater: float | None = None,
    anchor: float | None = None,
    max_iter: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """K-fold cross-validation by submission, next to the uncalibrated baselines.

    Each fold's submissions are predicted by a calibrator fitted on the others (fine-tuned
    from one fitted on ``pretrain=(distributions, human)`` when given). ``tune=True`` (or a
    grid, see :func:`tune`) chooses the penalties inside each training fold by a
    ``tune_folds``-fold inner cross-validation: nested, so no choice has seen the fold it
    predicts. Baselines use the judge's own distribution on ``target``: ``argmax`` and
    ``expected`` value. Returns ``(metrics, predictions)``: metrics are
    :data:`REPORT_METRICS` of each method against the held-out human labels with
    cluster-bootstrap CIs (via :func:`rubrictools.agreement`); predictions hold ``id, rater,
    human, calibrated, known_rater, p_true, expected, argmax`` per held-out label
    (``known_rater``: the rater had labels in the training folds, otherwise the
    average-rater prediction is used; ``p_true``: the calibrated probability of the human's
    label) and ``fold`` (the outer fold that predicted it, 0 to ``folds - 1``: fit a baseline
    on the very same folds), plus the chosen settings when tuned. ``progress`` shows a progress bar, one step
    per outer fold. ``n_jobs``: worker processes, one outer fold (with its inner search) at a
    time each (None or 1: none; ``k``: ``k``, at most one per CPU; -1: one per CPU, -2: all but
    one); the results equal a serial run's. Workers start by importing the library (about a
    second each) and then stay for five idle minutes, so they pay with tuning (about half the
    time on two CPUs) or many folds, not for ten plain folds. ``features``, ``model``, ``l2``,
    ``l2_rater``, ``anchor`` and ``max_iter``
    are fixed :func:`fit` settings (None: fit's default).

    ``n_resamples``, ``seed``: the bootstrap's resamples; its seed (``0`` by default: identical
    calls give identical intervals; ``None`` draws afresh).
    """
    check_resampling(n_resamples=n_resamples, seed=seed)
    workers = check_n_jobs(n_jobs, stacklevel=3)  # the caller's line, past the @adapted wrapper
    fit_kwargs = _fit_settings(
        features=features, model=model, l2=l2, l2_rater=l2_rater, anchor=anchor, max_iter=max_iter
    )
    d = dist_frame(distributions)
    t = targets(human, target, d["id"].unique().to_list())
    _require_numeric(t["label"].unique().to_list(), target)
    shape, per_fit = _settings(fit_kwargs)
    grid = _checked_grid(DEFAULT_GRID if tune is True else tune, fit_kwargs) if tune else None
    if grid is not None and (isinstance(tune_folds, bool) or not isinstance(tune_folds, int) or tune_folds < 2):
        raise ValueError(f"tune_folds must be a whole number of at least 2, got {tune_folds!r}")
    base = fit(*pretrain, target=target, **fit_kwargs) if pretrain is not None else None
    ex = examples(d, human, target=target, init=base, **shape)
    check_binary(model, sorted(set(ex.label.tolist())), target)
    desc = "cross-validation (tuning inside each fold)" if grid else "cross-validation"
    bar = progress_bar(folds, enabled=progress, desc=desc, unit="fold")
    rows = np.arange(ex.n)
    fold = _folds(ex, rows, folds, seed)
    jobs = [
        (ex, rows[fold != k], rows[fold == k], k, grid, tune_folds, seed, target, per_rater, base, per_fit)
        for k in range(folds)
    ]
    try:
        parts = run_jobs(_outer_part, jobs, n_jobs=workers, done=None if bar is None else lambda: bar.update(1))
    finally:
        if bar is not None:
            bar.close()
    return _report(d, t, pl.concat(parts), target, n_resamples, seed)


@adapted(renamed(bootstrap="n_resamples"))
def evaluate(
    calibrator: Calibrator,
    distributions: Any,
    human: Any,
    *,
    n_resamples: int = 1000,
    seed: int | None = 0,
    per_rater: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Score a fitted calibrator on held-out data, next to the uncalibrated baselines.

    For a calibrator fitted on one set (last month's labels, another domain, synthetic
    data) and tested on another. Same output as :func:`cross_validate`. Raters the
    calibrator has not seen get the average-rater prediction (``known_rater`` false); with
    ``per_rater=False`` everyone does. The target must have numeric labels.

    ``seed``: its seed (``0`` by default: identical calls give identical intervals; ``None``
    draws afresh).

    >>> import polars as pl
    >>> d = pl.DataFrame({"id": [1, 1, 2, 2, 3, 3], "criterion": "q", "label": ["1", "2"] * 3,
    ...                   "prob": [0.9, 0.1, 0.2, 0.8, 0.6, 0.4]})
    >>> h = pl.DataFrame({"id": [1, 2, 3], "criterion": "q", "rater": "a", "label": [1, 2, 1]})
    >>> metrics, table = evaluate(fit(d, h, target="q"), d, h, n_resamples=0)
    >>> metrics.filter(pl.col("metric") == "pearson")["method"].to_list()
    ['calibrated', 'expected', 'argmax']
    """
    check_resampling(n_resamples=n_resamples, seed=seed)
    d = dist_frame(distributions)
    t = targets(human, calibrator.target, d["id"].unique().to_list())
    if t.height == 0:
        raise ValueError(f"no human labels on {calibrator.target!r} for the submissions in distributions")
    _require_numeric(calibrator.labels, calibrator.target)
    ex = examples(d, t, target=calibrator.target, init=calibrator)
    preds = _predict_rows(calibrator, ex, np.arange(ex.n), per_rater)
    return _report(d, t, preds, calibrator.target, n_resamples, seed)
