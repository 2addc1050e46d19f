"""How a rubric's scores spread: across repeated runs (consistency) and across submissions
(discrimination), the two meta-metrics rubrify's rubric evolution optimises besides agreement.

* ``consistency(runs)``: ``1 - mean_i CV_i`` clipped to [0, 1], where ``CV_i = sd_i / |mean_i|``
  is the coefficient of variation of submission ``i``'s scores over repeated runs (population
  standard deviation); a submission whose mean is 0 counts as CV 0 when every run gave 0,
  else as CV 1. 1: every run gives every submission the same score.
* ``discrimination(scores)``: the normalised entropy of the score distribution,
  ``H = -sum_k p_k log p_k / log K`` over ``K`` equal-width bins of ``[low, high]`` (or over
  the distinct ``levels`` of a discrete scale); 0: every submission gets the same score,
  1: the scores spread evenly over the scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["consistency", "discrimination"]


def consistency(runs: Any) -> float:
    """``1 - mean coefficient of variation`` of each submission's scores over repeated runs.

    Parameters
    ----------
    runs
        A ``(submissions, runs)`` matrix of scores (at least two runs); NaN (a failed run)
        is left out of its submission's figures, and a submission with fewer than two scores
        is left out.

    Returns
    -------
    float
        In [0, 1]; NaN when no submission has two scores.

    Examples
    --------
    >>> from rubrictools import metrics as m
    >>> m.consistency([[0.5, 0.5], [0.8, 0.8]])
    1.0
    >>> round(m.consistency([[0.4, 0.6], [1.0, 1.0]]), 3)  # CVs 0.2 and 0: 1 - 0.1
    0.9
    """
    try:
        a = np.asarray(runs, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            "runs must be a numeric (submissions, runs) matrix, every row as long (NaN for a missing run)"
        ) from None
    if a.ndim != 2 or a.shape[1] < 2:
        raise ValueError(f"runs must be a (submissions, runs) matrix with at least 2 runs, got shape {a.shape}")
    n = (~np.isnan(a)).sum(axis=1)
    a = a[n >= 2]
    if a.shape[0] == 0:
        return float("nan")
    mean = np.nanmean(a, axis=1)
    sd = np.nanstd(a, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(mean != 0, sd / np.abs(mean), np.where(sd == 0, 0.0, 1.0))
    return float(np.clip(1.0 - cv.mean(), 0.0, 1.0))


def discrimination(
    scores: Any,
    *,
    bins: int | None = None,
    low: float | None = None,
    high: float | None = None,
    levels: Sequence[float] | None = None,
) -> float:
    """Normalised entropy of the score distribution: 0 when every score is the same, 1 when
    the scores spread evenly over the scale.

    ``H = -sum_k p_k log p_k / log K``: ``p_k`` the share of scores in bin ``k`` of ``bins``
    equal-width bins over ``[low, high]`` (by default 10 bins of [0, 1]; the top edge in the last
    bin), or the share of each of the discrete ``levels`` (e.g. ``[1, 2, 3, 4, 5]`` for a 1-5
    rating; then without ``bins``, ``low``, ``high``), ``K`` the number of bins or levels. NaN
    scores are left out.

    Examples
    --------
    >>> from rubrictools import metrics as m
    >>> m.discrimination([0.7, 0.7, 0.7])
    0.0
    >>> round(m.discrimination([1, 2, 3, 4, 5], levels=[1, 2, 3, 4, 5]), 6)
    1.0
    >>> round(m.discrimination([0.05, 0.95], bins=2), 3)
    1.0
    """
    try:
        x = np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("scores must be numbers") from None
    if x.ndim > 1:
        raise ValueError(f"scores must be one score per submission (1-D), got shape {x.shape}")
    x = x[~np.isnan(x)]
    if levels is not None:
        if bins is not None or low is not None or high is not None:
            raise ValueError("pass levels= or bins=/low=/high=, not both")
        lv = np.asarray(list(levels), dtype=float)
        if np.unique(lv).size != lv.size:
            raise ValueError(f"levels must not repeat a value, got {list(levels)}")
        if lv.size < 2:
            raise ValueError(f"levels must hold at least 2 values, got {list(levels)}")
        outside = x[~np.isin(x, lv)]
        if outside.size:
            raise ValueError(f"scores {sorted(set(outside.tolist()))[:5]} are not among the levels {lv.tolist()}")
        counts = np.array([(x == v).sum() for v in lv], dtype=float)
    else:
        bins, low, high = 10 if bins is None else bins, 0.0 if low is None else low, 1.0 if high is None else high
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
            raise ValueError(f"bins must be an int >= 2, got {bins!r}")
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(f"high must be above low, got low={low!r}, high={high!r}")
        outside = x[(x < low) | (x > high)]
        if outside.size:
            raise ValueError(f"scores {sorted(set(outside.tolist()))[:5]} are outside [low, high] = [{low}, {high}]")
        counts = np.histogram(x, bins=bins, range=(low, high))[0].astype(float)
    if x.size == 0:
        return float("nan")
    p = counts[counts > 0] / x.size
    return float(max(0.0, -(p * np.log(p)).sum() / np.log(counts.size)))
