"""Error and bias of judge scores against human scores (paired, same items).

With ``d_i = y_pred_i - y_true_i`` (judge minus human):

* ``rmse = sqrt(mean(d^2))``, ``mae = mean(|d|)``;
* ``mean_bias = mean(d)`` (positive: the judge is more generous), with a paired t test
  (or Wilcoxon signed-rank) ``pvalue`` and the standardised effect size
  ``d_z = mean(d) / sd(d)`` (Cohen's d for paired samples, ``sd`` with ``n - 1``).

All three are functions of the sums ``n, sum d, sum d^2, sum |d|`` (:func:`error_stats`),
which the bootstrap resamples with one matrix product.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from rubrictools.metrics._base import Estimate, NanPolicy, paired, safe_div

__all__ = ["error_stats", "errors_from_stats", "mae", "mean_bias", "rmse"]


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
    se = float(np.sqrt(safe_div(np.clip(tot[2] - n * bias * bias, 0, None), n - 1) / n)) if n > 1 else float("nan")
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
    return Estimate(bias, pvalue=pvalue, effect_size=float(res["effect_size"]), se=se, n=n)
