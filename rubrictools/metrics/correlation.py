"""Correlations between judge and human scores: Pearson, Spearman and Kendall's tau-b.

Each has a weighted, batched twin (``*_weighted(x, y, w)`` with ``w`` of shape ``(B, n)``)
that equals the coefficient on the data set in which row *i* appears ``w[b, i]`` times, so
the cluster bootstrap evaluates all resamples at once. P-values are for the point
estimate only and follow scipy (t distribution for Pearson/Spearman, scipy's exact or
tie-corrected normal test for Kendall).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rubrictools.metrics._base import Estimate, NanPolicy, paired, safe_div

__all__ = [
    "distinct_pairs",
    "kendall",
    "kendall_weighted",
    "merge_duplicate_pairs",
    "pearson",
    "pearson_weighted",
    "spearman",
    "spearman_weighted",
    "weighted_midranks",
]


def pearson_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r for each row of weights ``w`` ``(B, n)``:
    ``r = sum w (x - mx)(y - my) / sqrt(sum w (x - mx)^2 sum w (y - my)^2)`` (weighted means)."""
    x = np.asarray(x, float) - np.mean(x) if len(x) else np.asarray(x, float)
    y = np.asarray(y, float) - np.mean(y) if len(y) else np.asarray(y, float)
    w = np.atleast_2d(w)
    sw = w.sum(-1)
    mx = safe_div(w @ x, sw)
    my = safe_div(w @ y, sw)
    sxx = w @ (x * x) - sw * mx * mx
    syy = w @ (y * y) - sw * my * my
    sxy = w @ (x * y) - sw * mx * my
    den = np.sqrt(np.clip(sxx, 0, None) * np.clip(syy, 0, None))
    # a side is constant when its spread is at rounding level of its own sum of squares (each
    # side on its own: a product threshold lets one constant side through as r ~ 0)
    flat = (sxx <= 1e-10 * (w @ (x * x))) | (syy <= 1e-10 * (w @ (y * y)))
    r = np.where(~flat & (den > 0), safe_div(sxy, den), np.nan)
    return np.clip(r, -1.0, 1.0)


def weighted_midranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Midranks of ``x`` in the data set where row *i* appears ``w[b, i]`` times, ``(B, n)``.

    Rank of value ``v`` = (total weight of values < v) + (weight of values == v + 1) / 2.
    """
    x = np.asarray(x)
    w = np.atleast_2d(np.asarray(w, float))
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    n = xs.shape[0]
    if n == 0:
        return np.zeros_like(w)
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = xs[1:] != xs[:-1]
    group = np.cumsum(new) - 1  # tie group of each sorted position
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)  # exclusive
    cw = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(w[:, order], axis=1)], axis=1)
    before = cw[:, starts]
    within = cw[:, ends] - before
    rank_sorted = (before + (within + 1) / 2)[:, group]
    out = np.empty_like(rank_sorted)
    out[:, order] = rank_sorted
    return out


def spearman_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Spearman's rho (Pearson's r of midranks) for each row of weights ``w`` ``(B, n)``."""
    w = np.atleast_2d(np.asarray(w, float))
    x, y, w = merge_duplicate_pairs(np.asarray(x, float), np.asarray(y, float), w)
    rx = weighted_midranks(x, w)
    ry = weighted_midranks(y, w)
    sw = w.sum(-1, keepdims=True)
    mx = safe_div((w * rx).sum(-1, keepdims=True), sw)
    my = safe_div((w * ry).sum(-1, keepdims=True), sw)
    dx, dy = rx - mx, ry - my
    sxy = (w * dx * dy).sum(-1)
    den = np.sqrt((w * dx * dx).sum(-1) * (w * dy * dy).sum(-1))
    return np.clip(np.where(den > 1e-12 * sw[:, 0] ** 2, safe_div(sxy, den), np.nan), -1.0, 1.0)


def _tie_pairs(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Number of pairs tied on ``v`` in the weighted data set: ``sum_g c_g (c_g - 1) / 2``."""
    _, inv = np.unique(v, return_inverse=True)
    g = inv.max() + 1 if inv.size else 0
    c = np.zeros((w.shape[0], g))
    for lo in range(0, w.shape[1], 4096):
        hi = min(lo + 4096, w.shape[1])
        onehot = np.zeros((hi - lo, g))
        onehot[np.arange(hi - lo), inv[lo:hi]] = 1.0
        c += w[:, lo:hi] @ onehot
    return (c * (c - 1) / 2).sum(-1)


def distinct_pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of one row per distinct ``(x, y)`` and each row's pair index (1-D uniques only: fast)."""
    _ux, ix = np.unique(x, return_inverse=True)
    uy, iy = np.unique(y, return_inverse=True)
    code = ix.reshape(-1).astype(np.int64) * max(uy.size, 1) + iy.reshape(-1)
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def merge_duplicate_pairs(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Collapse rows with the same ``(x, y)`` into one row whose weight is their sum."""
    if x.shape[0] < 2:
        return x, y, w
    first, inv = distinct_pairs(x, y)
    if first.size == x.shape[0]:
        return x, y, w
    from scipy import sparse

    onehot = sparse.csr_matrix((np.ones(inv.size), (np.arange(inv.size), inv)), shape=(inv.size, first.size))
    merged = np.asarray((onehot.T @ w.T).T)
    return x[first], y[first], merged


def kendall_weighted(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, block: int = 2048) -> np.ndarray:
    """Kendall's tau-b for each row of weights ``w`` ``(B, n)``.

    ``tau_b = (n_c - n_d) / sqrt((n0 - n1)(n0 - n2))`` with ``n_c - n_d = 1/2 sum_{i != j}
    w_i w_j sign(x_i - x_j) sign(y_i - y_j)``, ``n0 = N (N - 1) / 2`` (``N = sum w``) and
    ``n1``, ``n2`` the pairs tied on x and on y. Rows with identical ``(x, y)`` are merged
    first (their weights add up; they are tied with each other on both), so the cost is
    ``O(B U^2)`` for ``U`` distinct pairs: cheap for rubric scores and ordinal labels.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    w = np.atleast_2d(np.asarray(w, float))
    x, y, w = merge_duplicate_pairs(x, y, w)
    n = x.shape[0]
    s = np.zeros(w.shape[0])
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        sign = np.sign(x[lo:hi, None] - x[None, :]) * np.sign(y[lo:hi, None] - y[None, :])
        s += ((w @ sign.T) * w[:, lo:hi]).sum(-1)
    diff = s / 2
    big_n = w.sum(-1)
    n0 = big_n * (big_n - 1) / 2
    n1 = _tie_pairs(x, w)
    n2 = _tie_pairs(y, w)
    den = np.sqrt(np.clip(n0 - n1, 0, None) * np.clip(n0 - n2, 0, None))
    return np.clip(np.where(den > 0, safe_div(diff, den), np.nan), -1.0, 1.0)


def _t_pvalue(r: float, n: int) -> float:
    from scipy.stats import t as t_dist

    if n < 3 or not np.isfinite(r):
        return float("nan")
    if abs(r) >= 1:
        return 0.0
    df = n - 2
    tstat = r * np.sqrt(df / ((1 - r) * (1 + r)))
    return float(2 * t_dist.sf(abs(tstat), df))


def pearson(x: Any, y: Any, *, nan_policy: NanPolicy = "omit") -> Estimate:
    """Pearson's correlation ``r = cov(x, y) / (sd(x) sd(y))`` with a two-sided ``pvalue``
    (t test, n - 2 df) and ``n``. NaN when either side is constant or n < 2.

    >>> round(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.8
    """
    a, b, _ = paired(x, y, names=("x", "y"), numeric=True, nan_policy=nan_policy)
    n = a.shape[0]
    r = float(pearson_weighted(a, b, np.ones((1, n)))[0]) if n >= 2 else float("nan")
    from scipy.stats import beta

    if n < 3 or not np.isfinite(r):
        p = float("nan")
    else:
        dist = beta(n / 2 - 1, n / 2 - 1, loc=-1, scale=2)
        p = float(2 * dist.sf(abs(r))) if abs(r) < 1 else 0.0
    return Estimate(r, pvalue=p, n=n)


def spearman(x: Any, y: Any, *, nan_policy: NanPolicy = "omit") -> Estimate:
    """Spearman's rank correlation (Pearson's r of midranks) with a two-sided t-test ``pvalue``.

    >>> round(spearman([1, 2, 3, 4], [1, 3, 2, 40]), 4)
    0.8
    """
    a, b, _ = paired(x, y, names=("x", "y"), numeric=True, nan_policy=nan_policy)
    n = a.shape[0]
    rho = float(spearman_weighted(a, b, np.ones((1, n)))[0]) if n >= 2 else float("nan")
    return Estimate(rho, pvalue=_t_pvalue(rho, n), n=n)


def kendall(x: Any, y: Any, *, nan_policy: NanPolicy = "omit") -> Estimate:
    """Kendall's tau-b (ties in both variables corrected), with scipy's two-sided ``pvalue``
    (exact for small untied samples, normal approximation with tie-corrected variance otherwise).

    >>> round(kendall([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.6667
    """
    from scipy.stats import kendalltau

    a, b, _ = paired(x, y, names=("x", "y"), numeric=True, nan_policy=nan_policy)
    n = a.shape[0]
    if n < 2:
        return Estimate(float("nan"), pvalue=float("nan"), n=n)
    res = kendalltau(a, b)
    return Estimate(float(res.statistic), pvalue=float(res.pvalue), n=n)
