"""Agreement among several raters: Fleiss' kappa, percent agreement, Krippendorff's alpha, ICC.

Inputs are a ``(n_units, n_raters)`` ratings matrix (rows = submissions, columns = raters;
``None``/NaN = not rated) or, for Fleiss' kappa, a ``(n_units, n_categories)`` count table.
As for the pairwise metrics, every coefficient is computed from per-unit sufficient
statistics (``*_unit_stats``) whose sums feed a batched ``*_from_stats`` function, so a
cluster bootstrap over units is a matrix product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rubrictools.metrics._base import Estimate, rating_counts, ratings_matrix, safe_div
from rubrictools.metrics.kappa import chance_corrected_from_unit_stats, unit_agreement_stats

__all__ = [
    "ICC_KINDS",
    "alpha_from_stats",
    "alpha_unit_stats",
    "fleiss_kappa",
    "icc",
    "icc_from_stats",
    "icc_unit_stats",
    "krippendorff_alpha",
    "percent_agreement",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
ICC_KINDS: tuple[str, ...] = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def _counts(ratings: Any, counts: Any, categories: Sequence[Any] | None) -> np.ndarray:
    if (ratings is None) == (counts is None):
        raise ValueError("pass exactly one of ratings= (units x raters) or counts= (units x categories)")
    if counts is not None:
        c = np.asarray(counts, dtype=float)
        if c.ndim != 2 or (c < 0).any():
            raise ValueError("counts must be a 2-D table of non-negative counts (units x categories)")
        return c
    c, _ = rating_counts(ratings, categories=categories)
    return c.astype(float)


def fleiss_kappa(ratings: Any = None, *, counts: Any = None, categories: Sequence[Any] | None = None) -> float:
    """Fleiss' kappa for any number of raters per unit (Fleiss 1971; Gwet's form for missing ratings).

    ``pa = mean_i sum_k r_ik (r_ik - 1) / (m_i (m_i - 1))`` over units with ``m_i >= 2``
    ratings, ``pi_k = mean_i r_ik / m_i``, ``pe = sum_k pi_k^2``,
    ``kappa = (pa - pe) / (1 - pe)``. With the same number of raters on every unit this is
    exactly Fleiss (1971) and ``statsmodels.stats.inter_rater.fleiss_kappa``.

    >>> round(fleiss_kappa(counts=[[3, 0], [0, 3], [2, 1]]), 4)
    0.55
    """
    c = _counts(ratings, counts, categories)
    return float(chance_corrected_from_unit_stats(unit_agreement_stats(c).sum(0), "fleiss"))


def percent_agreement(ratings: Any = None, *, counts: Any = None) -> float:
    """Mean pairwise agreement ``pa`` over units rated at least twice (see :func:`fleiss_kappa`).

    >>> percent_agreement([[1, 1, 1], [1, 2, None]])
    0.5
    """
    c = _counts(ratings, counts, None)
    return float(chance_corrected_from_unit_stats(unit_agreement_stats(c).sum(0), "pa"))


# ----------------------------------------------------------------------------- Krippendorff
def alpha_unit_stats(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence contributions ``(n_units, V*V)``: ``(n_u n_u^T - diag(n_u)) / (m_u - 1)``
    for units with ``m_u >= 2`` pairable values (0 otherwise)."""
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(1)
    v = counts.shape[1]
    outer = counts[:, :, None] * counts[:, None, :]
    outer[:, np.arange(v), np.arange(v)] -= counts
    scale = np.where(m >= 2, safe_div(np.ones_like(m, dtype=float), m - 1), 0.0)
    return (outer * scale[:, None, None]).reshape(counts.shape[0], v * v)


def alpha_from_stats(tot: np.ndarray, values: np.ndarray, level: Level) -> np.ndarray:
    """Krippendorff's alpha from summed coincidences ``(..., V*V)`` over the value domain ``values``.

    ``alpha = 1 - (n - 1) sum(o * delta) / sum((n_c n_k - [c = k] n_c) * delta)`` with ``o`` the
    coincidence matrix, ``n_c`` its margins, ``n = sum n_c`` and ``delta`` the level's squared
    distance: nominal ``[c != k]``; ordinal ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``;
    interval ``(c - k)^2``; ratio ``((c - k) / (c + k))^2``.
    """
    v = len(values)
    o = tot.reshape(*tot.shape[:-1], v, v)
    nv = o.sum(-1)
    n = nv.sum(-1)
    if level == "nominal":
        delta = 1.0 - np.eye(v)
    elif level == "interval":
        x = np.asarray(values, dtype=float)
        delta = (x[:, None] - x[None, :]) ** 2
    elif level == "ratio":
        x = np.asarray(values, dtype=float)
        s = x[:, None] + x[None, :]
        delta = np.where(s != 0, safe_div(x[:, None] - x[None, :], s), 0.0) ** 2
    elif level == "ordinal":
        cum = np.cumsum(nv, axis=-1)
        lo = np.minimum.outer(np.arange(v), np.arange(v))
        hi = np.maximum.outer(np.arange(v), np.arange(v))
        before = np.concatenate([np.zeros((*nv.shape[:-1], 1)), cum], axis=-1)
        between = before[..., hi + 1] - before[..., lo]
        delta = (between - (nv[..., :, None] + nv[..., None, :]) / 2) ** 2
    else:
        raise ValueError("level must be 'nominal', 'ordinal', 'interval' or 'ratio'")
    d_o = (o * delta).sum((-2, -1))
    e = nv[..., :, None] * nv[..., None, :]
    idx = np.arange(v)
    e[..., idx, idx] -= nv
    d_e = (e * delta).sum((-2, -1))
    return 1.0 - safe_div((n - 1) * d_o, d_e)


def krippendorff_alpha(
    ratings: Any,
    *,
    level: Level = "nominal",
    value_domain: Sequence[Any] | None = None,
) -> float:
    """Krippendorff's alpha for a ``(units, raters)`` matrix with missing ratings.

    Formula in :func:`alpha_from_stats` (Krippendorff 2011). Units with fewer than two
    ratings are not pairable and do not count. ``value_domain`` fixes the ordered values
    (needed for ``ordinal`` when the order is not the sorted order). Matches the
    ``krippendorff`` package (whose input is the transpose, raters x units).

    >>> round(krippendorff_alpha([[1, 1], [2, 2], [1, 2]], level="nominal"), 4)
    0.4444
    """
    counts, values = rating_counts(ratings_matrix(ratings), categories=value_domain)
    if level != "nominal" and values.dtype.kind not in "fiu" and level != "ordinal":
        raise ValueError(f"level={level!r} needs numeric ratings")
    return float(alpha_from_stats(alpha_unit_stats(counts).sum(0), values, level))


# ----------------------------------------------------------------------------- ICC
def icc_unit_stats(ratings: np.ndarray) -> np.ndarray:
    """Per-unit statistics for the ICC ANOVA on complete rows: ``1, R_i, R_i^2, sum_j x_ij^2, x_i1..x_ik``."""
    x = np.asarray(ratings, dtype=float)
    r = x.sum(1)
    return np.column_stack([np.ones(x.shape[0]), r, r * r, (x * x).sum(1), x])


def icc_from_stats(tot: np.ndarray) -> dict[str, np.ndarray]:
    """All six Shrout & Fleiss (1979) ICCs from summed :func:`icc_unit_stats` ``(..., 4 + k)``.

    With ``n`` units, ``k`` raters, grand mean ``g``: ``MSR = (sum R_i^2 / k - n k g^2) / (n - 1)``,
    ``MSC = (sum_j C_j^2 / n - n k g^2) / (k - 1)``, ``MSE = (SST - SSR - SSC) / ((n-1)(k-1))``,
    ``MSW = (SST - SSR) / (n (k - 1))``; then ICC1 = (MSR - MSW) / (MSR + (k-1) MSW),
    ICC2 = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n),
    ICC3 = (MSR - MSE) / (MSR + (k-1) MSE), ICC1k = (MSR - MSW) / MSR,
    ICC2k = (MSR - MSE) / (MSR + (MSC - MSE) / n), ICC3k = (MSR - MSE) / MSR.
    Also returns the mean squares and their degrees of freedom. A sum of squares within
    ``1e-11 * sum x^2`` of zero is zero (it is floating-point cancellation), so degenerate
    forms come out NaN, not ~1e14; so does a ratio whose denominator's terms cancel (ICC2k of
    ``[[2, 1], [1, 2], [2, 2]]``, where ``MSR = (MSE - MSC) / n``).
    """
    n = tot[..., 0]
    k = tot.shape[-1] - 4
    total = tot[..., 1]
    cols = tot[..., 4:]
    corr = safe_div(total * total, n * k)  # n k g^2
    ssr = tot[..., 2] / k - corr
    ssc = safe_div((cols * cols).sum(-1), n) - corr
    sst = tot[..., 3] - corr
    eps = 1e-11 * np.abs(tot[..., 3])

    def clean(ss: np.ndarray) -> np.ndarray:
        return np.where(np.abs(ss) <= eps, 0.0, ss)

    ssr, ssc, sst = clean(ssr), clean(ssc), clean(sst)
    msr = safe_div(ssr, n - 1)
    msc = safe_div(ssc, np.full_like(n, k - 1.0))
    mse = safe_div(clean(sst - ssr - ssc), (n - 1) * (k - 1))
    msw = safe_div(clean(sst - ssr), n * (k - 1))

    def ratio(num: np.ndarray, *terms: np.ndarray) -> np.ndarray:
        # num / sum(terms), NaN where the terms cancel to within rounding of their size
        den = sum(terms, np.zeros_like(n))
        scale = sum((np.abs(t) for t in terms), np.zeros_like(n))
        return safe_div(num, np.where(np.abs(den) <= 1e-9 * scale, 0.0, den))

    between = safe_div(msc - mse, n)
    return {
        "ICC1": ratio(msr - msw, msr, (k - 1) * msw),
        "ICC2": ratio(msr - mse, msr, (k - 1) * mse, k * between),
        "ICC3": ratio(msr - mse, msr, (k - 1) * mse),
        "ICC1k": ratio(msr - msw, msr),
        "ICC2k": ratio(msr - mse, msr, between),
        "ICC3k": ratio(msr - mse, msr),
        "MSR": msr,
        "MSC": msc,
        "MSE": mse,
        "MSW": msw,
        "n": n,
        "k": np.full_like(n, float(k)),
    }


def icc(ratings: Any, *, kind: str = "ICC2") -> Estimate:
    """Intraclass correlation of a ``(units, raters)`` matrix of numeric ratings.

    ``kind`` is one of ``ICC1`` (one-way random), ``ICC2`` (two-way random, absolute
    agreement; ICC(2,1)), ``ICC3`` (two-way mixed, consistency; ICC(3,1)) or their
    ``k``-rater means ``ICC1k``, ``ICC2k``, ``ICC3k``; formulas in :func:`icc_from_stats`.
    Units with a missing rating are dropped (the ANOVA needs complete rows). The
    :class:`Estimate` carries the F test ``pvalue`` for rater-unit variance > 0 and
    ``df1``/``df2``.

    >>> ratings = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> round(icc(ratings, kind="ICC3"), 2)
    0.71
    """
    from scipy.stats import f as f_dist

    if kind not in ICC_KINDS:
        raise ValueError(f"kind must be one of {ICC_KINDS}")
    x = ratings_matrix(ratings)
    try:
        x = x.astype(float)
    except (TypeError, ValueError):
        raise ValueError("icc needs numeric ratings") from None
    x = x[~np.isnan(x).any(1)]
    if x.shape[1] < 2:
        raise ValueError("icc needs at least two raters")
    res = icc_from_stats(icc_unit_stats(x - x.mean()).sum(0))  # ICCs are shift-invariant; centring keeps precision
    n, k = x.shape
    if kind.startswith("ICC1"):
        fstat, df1, df2 = safe_div(res["MSR"], res["MSW"]), n - 1, n * (k - 1)
    else:
        fstat, df1, df2 = safe_div(res["MSR"], res["MSE"]), n - 1, (n - 1) * (k - 1)
    err = res["MSW"] if kind.startswith("ICC1") else res["MSE"]
    if df2 > 0 and err == 0 and res["MSR"] > 0:
        p = 0.0  # perfect agreement: F is infinite
    else:
        p = float(f_dist.sf(fstat, df1, df2)) if np.isfinite(fstat) and df2 > 0 else float("nan")
    return Estimate(float(res[kind]), pvalue=p, df1=df1, df2=df2)
