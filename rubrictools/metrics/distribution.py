"""Distances between the distributions of judge and human scores or labels.

* ``wasserstein(u, v)``: earth mover's distance between the empirical distributions,
  ``W1 = integral |F_u(t) - F_v(t)| dt``;
* ``ks_2samp(u, v)``: the two-sample Kolmogorov-Smirnov statistic ``D = sup_t |F_u - F_v|``
  with scipy's ``pvalue``;
* ``js_divergence(a, b)``: Jensen-Shannon divergence of two label distributions,
  ``JS = (KL(p || m) + KL(q || m)) / 2`` with ``m = (p + q) / 2`` (base 2: in [0, 1]).

The weighted, batched twins take weights ``(B, n)`` for each sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rubrictools.metrics._base import Estimate, as_1d, encode_labels, is_missing, safe_div

__all__ = ["cdf_distances_weighted", "js_divergence", "js_from_counts", "ks_2samp", "wasserstein"]


def _clean(x: Any, name: str) -> np.ndarray:
    a = as_1d(x, name=name)
    try:
        a = a.astype(float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    return a[~np.isnan(a)]


def cdf_distances_weighted(
    u: np.ndarray, v: np.ndarray, wu: np.ndarray, wv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wasserstein-1 and KS distances between weighted samples, one per row of ``wu``/``wv`` ``(B, n)``.

    Both empirical CDFs are evaluated on the sorted union of values ``t_1 < ... < t_M``:
    ``W1 = sum_m |F_u(t_m) - F_v(t_m)| (t_{m+1} - t_m)``, ``KS = max_m |F_u(t_m) - F_v(t_m)|``.
    """
    u = np.asarray(u, float)
    v = np.asarray(v, float)
    wu = np.atleast_2d(np.asarray(wu, float))
    wv = np.atleast_2d(np.asarray(wv, float))
    grid = np.unique(np.concatenate([u, v]))
    m = grid.shape[0]
    b = wu.shape[0]
    if m == 0:
        nan = np.full(b, np.nan)
        return nan, nan
    iu = np.searchsorted(grid, u)
    iv = np.searchsorted(grid, v)
    fu = np.zeros((b, m))
    fv = np.zeros((b, m))
    # scatter-add weights into their grid positions, then cumulate: F(t_m) before normalising
    np.add.at(fu.T, iu, wu.T)
    np.add.at(fv.T, iv, wv.T)
    fu = np.cumsum(fu, axis=1)
    fv = np.cumsum(fv, axis=1)
    fu = safe_div(fu, fu[:, -1:])
    fv = safe_div(fv, fv[:, -1:])
    diff = np.abs(fu - fv)
    w1 = (diff[:, :-1] * np.diff(grid)[None, :]).sum(1)
    ks = diff.max(1)
    return w1, ks


def wasserstein(u: Any, v: Any) -> float:
    """Earth mover's (Wasserstein-1) distance between the empirical distributions of ``u`` and
    ``v`` (missing values dropped; the samples need not be the same size). NaN if either is empty.

    >>> wasserstein([0, 1, 3], [5, 6, 8])
    5.0
    """
    a, b = _clean(u, "u"), _clean(v, "v")
    if a.size == 0 or b.size == 0:
        return float("nan")
    w1, _ = cdf_distances_weighted(a, b, np.ones((1, a.size)), np.ones((1, b.size)))
    return float(w1[0])


def ks_2samp(u: Any, v: Any) -> Estimate:
    """Two-sample Kolmogorov-Smirnov statistic ``sup |F_u - F_v|`` with scipy's two-sided ``pvalue``.

    >>> round(ks_2samp([1, 2, 3, 4], [3, 4, 5, 6]), 2)
    0.5
    """
    from scipy import stats

    a, b = _clean(u, "u"), _clean(v, "v")
    if a.size == 0 or b.size == 0:
        return Estimate(float("nan"), pvalue=float("nan"))
    _, ks = cdf_distances_weighted(a, b, np.ones((1, a.size)), np.ones((1, b.size)))
    return Estimate(float(ks[0]), pvalue=float(stats.ks_2samp(a, b).pvalue))


def js_from_counts(ca: np.ndarray, cb: np.ndarray, base: float = 2.0) -> np.ndarray:
    """Jensen-Shannon divergence between count vectors ``(..., K)`` (normalised inside)."""
    p = safe_div(ca, ca.sum(-1, keepdims=True))
    q = safe_div(cb, cb.sum(-1, keepdims=True))
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        ratio = np.where(a > 0, safe_div(a, m), 1.0)
        return np.where(a > 0, a * np.log(ratio), 0.0).sum(-1)

    return np.clip((kl(p) + kl(q)) / 2 / np.log(base), 0.0, None)


def js_divergence(a: Any, b: Any, *, labels: Sequence[Any] | None = None, base: float = 2.0) -> float:
    """Jensen-Shannon divergence between the label distributions of ``a`` and ``b``.

    Equals ``scipy.spatial.distance.jensenshannon(p, q, base) ** 2``. NaN if either is empty.

    >>> js_divergence(["MET", "MET"], ["UNMET", "UNMET"])
    1.0
    """
    x, y = as_1d(a, name="a"), as_1d(b, name="b")
    x, y = x[~is_missing(x)], y[~is_missing(y)]
    if x.size == 0 or y.size == 0:
        return float("nan")
    (cx, cy), classes = encode_labels(x, y, labels=labels)
    k = len(classes)
    return float(
        js_from_counts(np.bincount(cx, minlength=k).astype(float), np.bincount(cy, minlength=k).astype(float), base)
    )
