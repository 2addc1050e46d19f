"""Calibration of a judge's probabilities: reliability bins, expected calibration error, Brier score.

For predictions with confidence ``p_i`` (the probability the judge gave to its answer, or to
the positive class) and outcomes ``y_i`` in {0, 1} (the answer was right / the class occurred):

* bins ``B_1..B_M`` split [0, 1] into equal-width intervals (or equal-count quantiles),
  each ``(lower, upper]`` with the first also holding 0;
* ``ECE = sum_m |B_m| / n * |mean(y in B_m) - mean(p in B_m)|``;
* ``MCE = max_m |mean(y in B_m) - mean(p in B_m)|``;
* ``Brier = mean((p - y)^2)``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.metrics._base import paired

__all__ = ["brier_score", "expected_calibration_error", "reliability_table"]


def reliability_table(
    y_true: Any, y_prob: Any, *, n_bins: int = 10, strategy: Literal["uniform", "quantile"] = "uniform"
) -> pl.DataFrame:
    """Per-bin ``bin, lower, upper, n, mean_confidence, accuracy, gap`` (empty bins omitted).

    >>> reliability_table([1, 0, 1, 1], [0.9, 0.2, 0.8, 0.6], n_bins=2)["n"].to_list()
    [1, 3]
    """
    y, p, _ = paired(y_true, y_prob, names=("y_true", "y_prob"), numeric=True)
    if p.size and (p.min() < 0 or p.max() > 1):
        raise ValueError("y_prob must be probabilities in [0, 1]")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("y_true must be 0/1 outcomes")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be an int >= 1, got {n_bins!r}")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.unique(np.quantile(p, np.linspace(0, 1, n_bins + 1))) if p.size else np.array([0.0, 1.0])
        edges[0], edges[-1] = 0.0, 1.0
    else:
        raise ValueError("strategy must be 'uniform' or 'quantile'")
    # bins are (lower, upper], the first also holding 0 (scikit-learn's calibration_curve convention)
    idx = np.searchsorted(edges[1:-1], p, side="left")
    k = len(edges) - 1
    n = np.bincount(idx, minlength=k)
    conf = np.bincount(idx, weights=p, minlength=k)
    acc = np.bincount(idx, weights=y, minlength=k)
    keep = n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mc, ma = conf / n, acc / n
    return pl.DataFrame(
        {
            "bin": np.arange(k)[keep],
            "lower": edges[:-1][keep],
            "upper": edges[1:][keep],
            "n": n[keep],
            "mean_confidence": mc[keep],
            "accuracy": ma[keep],
            "gap": (ma - mc)[keep],
        }
    )


def expected_calibration_error(
    y_true: Any, y_prob: Any, *, n_bins: int = 10, strategy: Literal["uniform", "quantile"] = "uniform"
) -> float:
    """ECE: the bin-size-weighted mean ``|accuracy - confidence|`` (see the module docstring).

    >>> round(expected_calibration_error([1, 0, 1, 1], [0.9, 0.2, 0.8, 0.6], n_bins=2), 4)
    0.225
    """
    t = reliability_table(y_true, y_prob, n_bins=n_bins, strategy=strategy)
    total = float(t["n"].sum())
    return float((t["n"] * t["gap"].abs()).sum()) / total if total else float("nan")


def brier_score(y_true: Any, y_prob: Any) -> float:
    """Mean squared error of the probabilities, ``mean((p - y)^2)``.

    >>> brier_score([1, 0], [0.8, 0.4])
    0.1
    """
    y, p, _ = paired(y_true, y_prob, names=("y_true", "y_prob"), numeric=True)
    return float(np.mean((p - y) ** 2)) if y.size else float("nan")
