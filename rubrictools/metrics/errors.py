"""Error and bias of judge scores against human scores (paired, same items).

With ``d_i = y_pred_i - y_true_i`` (judge minus human):

* ``rmse = sqrt(mean(d^2))``, ``mae = mean(|d|)``;
* ``mean_bias = mean(d)`` (positive: the judge is more generous), with a paired t test
  (or Wilcoxon signed-rank) ``pvalue`` and the standardised effect size
  ``d_z = mean(d) / sd(d)`` (Cohen's d for paired samples, ``sd`` with ``n - 1``);
* ``rmse_affine = s_true * sqrt(1 - r^2)``: the RMSE left after the best affine
  recalibration ``a + b * y_pred`` (``s_true`` with ``n``, ``r`` Pearson's). For any scores
  ``rmse >= rmse_affine``; the gap is pure offset and scale error, and only a higher
  correlation lowers the floor.

All three are functions of the sums ``n, sum d, sum d^2, sum |d|`` (:func:`error_stats`),
which the bootstrap resamples with one matrix product.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from rubrictools.metrics._base import Estimate, NanPolicy, paired, safe_div
from rubrictools.metrics.correlation import pearson_weighted

__all__ = ["error_stats", "errors_from_stats", "mae", "mean_bias", "rmse", "rmse_affine", "rmse_affine_weighted"]


def error_stats(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Per-row statistics ``(n, 4)``: ``1, d, d^2, |d|`` with ``d = y_pred - y_true``."""
    d = np.asarray(y_pred, float) - np.asarray(y_true, float)
    return np.column_stack([np.ones_like(d), d, d * d, np.abs(d)])


def errors_from_stats(tot: np.ndarray) -> dict[str, np.ndarray]:
    """``rmse``, ``mae``, ``bias`` and ``effect_size`` from summed :func:`error_stats` ``(..., 4)``."""
    n, s1, s2, sa = tot[..., 0], tot[..., 1], tot[..., 2], tot[..., 3]
    mean = safe_div(s1, n)
    var = safe_div(np.clip(s2 - n * mean * mean, 0, None), n - 1)
    sd = np.sqrt(var)
    return {
        "rmse": np.sqrt(safe_div(s2, n)),
        "mae": safe_div(sa, n),
        "bias": mean,
        "effect_size": np.where(sd > 1e-12 * np.sqrt(safe_div(s2, n) + 1e-300), safe_div(mean, sd), np.nan),
    }


def _tot(y_true: Any, y_pred: Any, nan_policy: NanPolicy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t, p, _ = paired(y_true, y_pred, numeric=True, nan_policy=nan_policy)
    return error_stats(t, p).sum(0), t, p


def rmse(y_true: Any, y_pred: Any, *, nan_policy: NanPolicy = "omit") -> float:
    """Root mean squared error ``sqrt(mean((y_pred - y_true)^2))``; NaN for no pairs.

    >>> rmse([1, 2, 3], [1, 2, 5])
    1.1547005383792515
    """
    tot, _, _ = _tot(y_true, y_pred, nan_policy)
    return float(errors_from_stats(tot)["rmse"])


def rmse_affine_weighted(y_true: np.ndarray, y_pred: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`rmse_affine` for each row of weights ``w`` ``(B, n)`` (row *i* counted ``w[b, i]`` times)."""
    t = np.asarray(y_true, float)
    t = t - t.mean() if t.size else t
    w = np.atleast_2d(np.asarray(w, float))
    sw = w.sum(-1)
    mt = safe_div(w @ t, sw)
    var = np.clip(safe_div(w @ (t * t), sw) - mt * mt, 0, None)
    r = np.nan_to_num(pearson_weighted(y_pred, y_true, w), nan=0.0)  # constant scores: the mean is the best fit
    return np.where(sw > 0, np.sqrt(var * (1.0 - r * r)), np.nan)


def rmse_affine(y_true: Any, y_pred: Any, *, nan_policy: NanPolicy = "omit") -> float:
    """RMSE after the best affine recalibration of ``y_pred``: ``s_true * sqrt(1 - r^2)``.

    This is the RMSE of the least-squares line ``a + b * y_pred`` fitted to ``y_true`` on the
    same pairs (``s_true``: standard deviation with ``n``; ``r``: Pearson's r; ``r = 0`` for
    constant scores). No rescaling of these scores can do better, so ``rmse - rmse_affine``
    is the part of the error that calibration of offset and scale can remove, and a target
    RMSE ``e`` needs ``|r| >= sqrt(1 - e^2 / s_true^2)``. In-sample by construction: a floor,
    not a held-out estimate.

    >>> round(rmse_affine([1, 2, 3, 4], [10, 20, 30, 40]), 12)  # perfectly correlated: 0
    0.0
    >>> round(rmse_affine([1, 2, 3, 4], [1, 1, 1, 1]), 4)  # constant scores: the sd of y_true
    1.118
    """
    t, p, _ = paired(y_true, y_pred, numeric=True, nan_policy=nan_policy)
    return float(rmse_affine_weighted(t, p, np.ones((1, t.size)))[0]) if t.size else float("nan")


def mae(y_true: Any, y_pred: Any, *, nan_policy: NanPolicy = "omit") -> float:
    """Mean absolute error ``mean(|y_pred - y_true|)``; NaN for no pairs.

    >>> mae([1, 2, 3], [1, 2, 5])
    0.6666666666666666
    """
    tot, _, _ = _tot(y_true, y_pred, nan_policy)
    return float(errors_from_stats(tot)["mae"])


def mean_bias(
    y_true: Any, y_pred: Any, *, test: Literal["t", "wilcoxon"] = "t", nan_policy: NanPolicy = "omit"
) -> Estimate:
    """Mean signed difference ``mean(y_pred - y_true)`` with a paired test.

    Returns an :class:`Estimate` with ``pvalue`` (paired t test, or Wilcoxon signed-rank
    with ``test="wilcoxon"``), ``effect_size`` (``d_z = mean(d) / sd(d)``), ``se`` and ``n``.

    >>> b = mean_bias([1, 2, 3, 4], [2, 3, 3, 5])
    >>> float(b), round(b.effect_size, 4)
    (0.75, 1.5)
    """
    from scipy import stats

    tot, t, p = _tot(y_true, y_pred, nan_policy)
    res = errors_from_stats(tot)
    n = t.shape[0]
    bias = float(res["bias"])
    d = p - t  # two-pass spread: a one-pass sum of squares cancels at large offsets
    sd = float(np.std(d, ddof=1)) if n > 1 else float("nan")
    se = sd / np.sqrt(n) if n > 1 else float("nan")
    tiny = 1e-12 * float(np.sqrt(np.mean(d * d))) if n else 0.0  # differences equal up to rounding
    effect = bias / sd if n > 1 and sd > tiny else float("nan")
    pvalue = float("nan")
    if n >= 2 and np.any(p != t):
        if test == "t":
            pvalue = float(stats.ttest_rel(p, t).pvalue)
        elif test == "wilcoxon":
            pvalue = float(stats.wilcoxon(p - t).pvalue)
        else:
            raise ValueError("test must be 't' or 'wilcoxon'")
    elif n >= 2:
        pvalue = 1.0
    return Estimate(bias, pvalue=pvalue, effect_size=effect, se=se, n=n)
