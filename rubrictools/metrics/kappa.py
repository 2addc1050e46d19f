"""Chance-corrected agreement between raters: Cohen's kappa (unweighted and weighted) and
Gwet's AC1.

Cohen's kappa on a confusion matrix ``P = C / n`` with row/column marginals ``r``, ``c``
and disagreement weights ``D`` (``1 - I`` unweighted, ``|i - j|`` linear, ``(i - j)^2``
quadratic, in label order)::

    kappa = 1 - sum(D * P) / sum(D * outer(r, c))

Its asymptotic standard error follows Fleiss, Cohen & Everitt (1969), with agreement
weights ``A = 1 - D / max(D)`` (this is what SAS PROC FREQ prints as ASE)::

    var = [sum_ij P_ij (A_ij - (a_i. + a_.j)(1 - kappa))^2 - (kappa - pe (1 - kappa))^2] / (n (1 - pe)^2)

with ``a_i. = sum_j c_j A_ij``, ``a_.j = sum_i r_i A_ij``, ``pe = sum_ij A_ij r_i c_j``; the
standard error under the null ``kappa = 0`` (used for the p-value) replaces ``P`` by
``outer(r, c)`` and ``(1 - kappa)`` by 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rubrictools.metrics._base import Estimate, NanPolicy, paired, rating_counts, ratings_matrix, safe_div
from rubrictools.metrics.classification import confusion_counts

__all__ = [
    "ac1_from_confusion",
    "chance_corrected_from_unit_stats",
    "cohen_kappa",
    "disagreement_weights",
    "gwet_ac1",
    "kappa_from_confusion",
    "kappa_test_from_confusion",
    "unit_agreement_stats",
]

Weights = Literal["linear", "quadratic"] | None


def disagreement_weights(k: int, weights: Weights = None) -> np.ndarray:
    """The ``(k, k)`` disagreement weight matrix ``D`` for Cohen's kappa.

    >>> disagreement_weights(3, "linear").tolist()
    [[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]
    """
    i = np.arange(k, dtype=float)
    if weights is None:
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(i[:, None] - i[None, :])
    if weights == "quadratic":
        return (i[:, None] - i[None, :]) ** 2
    raise ValueError("weights must be None, 'linear' or 'quadratic'")


def kappa_from_confusion(cm: np.ndarray, weights: Weights = None) -> np.ndarray:
    """Cohen's kappa for a stack of confusion matrices ``(..., K, K)`` (formula in the module doc).

    NaN when the expected disagreement is 0 (both raters used one and the same class).
    """
    k = cm.shape[-1]
    d = disagreement_weights(k, weights)
    n = cm.sum(axis=(-2, -1))
    r = safe_div(cm.sum(axis=-1), n[..., None])
    c = safe_div(cm.sum(axis=-2), n[..., None])
    observed = (d * cm).sum(axis=(-2, -1)) / np.where(n > 0, n, np.nan)
    expected = (d * (r[..., :, None] * c[..., None, :])).sum(axis=(-2, -1))
    return 1.0 - safe_div(observed, expected)


def _kappa_se(cm: np.ndarray, kappa: float, weights: Weights) -> tuple[float, float]:
    n = cm.sum()
    k = cm.shape[0]
    if n == 0 or not np.isfinite(kappa):
        return float("nan"), float("nan")
    d = disagreement_weights(k, weights)
    a = 1.0 - d / d.max() if d.max() > 0 else np.ones_like(d)
    p = cm / n
    r, c = p.sum(1), p.sum(0)
    a_row = a @ c  # a_i. = sum_j c_j A_ij
    a_col = r @ a  # a_.j = sum_i r_i A_ij
    pe = float((a * np.outer(r, c)).sum())
    if pe >= 1:
        return float("nan"), float("nan")
    fac = 1.0 / ((1 - pe) ** 2 * n)
    term = (p * (a - (a_row[:, None] + a_col[None, :]) * (1 - kappa)) ** 2).sum()
    var = (term - (kappa - pe * (1 - kappa)) ** 2) * fac
    term0 = (np.outer(r, c) * (a - (a_row[:, None] + a_col[None, :])) ** 2).sum()
    var0 = (term0 - pe**2) * fac
    return float(np.sqrt(max(var, 0.0))), float(np.sqrt(max(var0, 0.0)))


def cohen_kappa(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    weights: Weights = None,
    sample_weight: Any = None,
    nan_policy: NanPolicy = "omit",
) -> Estimate:
    """Cohen's kappa between two raters, unweighted or linear/quadratic weighted.

    For weighted kappa the label order matters: pass ``labels`` in their ordinal order
    (sorted order is used otherwise). Returns an :class:`Estimate` with ``se`` (asymptotic
    standard error), ``se0`` (under kappa = 0) and ``pvalue`` (two-sided z test of
    kappa = 0 using ``se0``). NaN when both raters used the same single class.

    >>> k = cohen_kappa(["MET", "MET", "UNMET", "UNMET"], ["MET", "UNMET", "UNMET", "UNMET"])
    >>> round(k, 4), round(k.se, 4)
    (0.5, 0.375)
    """
    cm, _ = confusion_counts(y_true, y_pred, labels, sample_weight, nan_policy)
    return kappa_test_from_confusion(cm, weights)


def kappa_test_from_confusion(cm: np.ndarray, weights: Weights = None) -> Estimate:
    """Cohen's kappa of one ``(K, K)`` confusion matrix with ``se``, ``se0`` and the two-sided
    z-test ``pvalue`` of kappa = 0 (see :func:`cohen_kappa`)."""
    from scipy.special import ndtr

    kappa = float(kappa_from_confusion(cm, weights))
    se, se0 = _kappa_se(cm, kappa, weights)
    z = kappa / se0 if se0 > 0 else float("nan")
    pvalue = float(2 * ndtr(-abs(z))) if np.isfinite(z) else float("nan")
    return Estimate(kappa, se=se, se0=se0, pvalue=pvalue)


def ac1_from_confusion(cm: np.ndarray) -> np.ndarray:
    """Gwet's AC1 of two raters for a stack of confusion matrices ``(..., K, K)`` over K categories:
    ``pa = trace / n``, ``pi_k = (row_k + col_k) / (2 n)``, ``pe = sum_k pi_k (1 - pi_k) / (K - 1)``.

    >>> round(float(ac1_from_confusion(np.array([[3.0, 1.0], [0.0, 0.0]]))), 4)
    0.68
    """
    k = cm.shape[-1]
    n = cm.sum(axis=(-2, -1))
    pa = safe_div(np.trace(cm, axis1=-2, axis2=-1), n)
    pi = safe_div(cm.sum(-1) + cm.sum(-2), 2 * n[..., None])
    if k < 2:
        return np.full(np.shape(n), np.nan)
    pe = (pi * (1 - pi)).sum(-1) / (k - 1)
    return safe_div(pa - pe, 1 - pe)


# ----------------------------------------------------------------------------- Gwet / Fleiss
def unit_agreement_stats(counts: np.ndarray) -> np.ndarray:
    """Per-unit sufficient statistics for Fleiss' kappa, Gwet's AC1 and percent agreement.

    ``counts`` is ``(n_units, K)`` (raters per category). Columns of the result: the unit's
    pairwise agreement ``sum_k r_k (r_k - 1) / (m (m - 1))`` where ``m >= 2`` (else 0), the
    indicator ``m >= 2``, the class shares ``r_k / m`` (K columns, 0 when ``m = 0``) and the
    indicator ``m >= 1``. Sums of these over (resampled) units give every multi-rater
    coefficient of Gwet (2014) with missing ratings.
    """
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(1)
    two = m >= 2
    agree = np.where(two, safe_div((counts * (counts - 1)).sum(1), m * (m - 1)), 0.0)
    shares = np.where((m > 0)[:, None], safe_div(counts, m[:, None]), 0.0)
    return np.column_stack([agree, two.astype(float), shares, (m > 0).astype(float)])


def chance_corrected_from_unit_stats(tot: np.ndarray, kind: Literal["fleiss", "ac1", "pa"]) -> np.ndarray:
    """Fleiss' kappa, Gwet's AC1 or percent agreement from summed :func:`unit_agreement_stats`.

    ``pa = sum agree / #(m >= 2)``, ``pi_k = sum share_k / #(m >= 1)``; Fleiss:
    ``pe = sum_k pi_k^2``; AC1: ``pe = sum_k pi_k (1 - pi_k) / (K - 1)``;
    coefficient ``(pa - pe) / (1 - pe)``.
    """
    pa = safe_div(tot[..., 0], tot[..., 1])
    if kind == "pa":
        return pa
    k = tot.shape[-1] - 3
    pi = safe_div(tot[..., 2 : 2 + k], tot[..., -1:])
    if kind == "fleiss":
        pe = (pi * pi).sum(-1)
    elif kind == "ac1":
        pe = (pi * (1 - pi)).sum(-1) / (k - 1) if k > 1 else np.full(pa.shape, np.nan)
    else:
        raise ValueError(kind)
    return safe_div(pa - pe, 1 - pe)


def gwet_ac1(
    y_true: Any,
    y_pred: Any = None,
    *,
    labels: Sequence[Any] | None = None,
    nan_policy: NanPolicy = "omit",
) -> float:
    """Gwet's AC1, a chance-corrected agreement that stays stable under skewed prevalence.

    Two raters: ``gwet_ac1(y_true, y_pred)``. Several raters with missing ratings:
    ``gwet_ac1(ratings)`` with a ``(units, raters)`` matrix (``None``/NaN = missing).

    ``AC1 = (pa - pe) / (1 - pe)``, ``pe = sum_k pi_k (1 - pi_k) / (K - 1)``, where ``pa`` is
    the mean pairwise agreement over units rated at least twice and ``pi_k`` the mean share of
    category *k* over rated units (Gwet 2008, 2014). ``K`` counts the categories observed
    (or ``labels``). NaN with fewer than two categories.

    >>> round(gwet_ac1(["MET", "MET", "MET", "UNMET"], ["MET", "MET", "MET", "MET"]), 4)
    0.68
    """
    if y_pred is None:
        r = ratings_matrix(y_true)
    else:
        t, p, _ = paired(y_true, y_pred, nan_policy=nan_policy)
        r = np.column_stack([t, p]) if t.size else np.empty((0, 2))
    counts, _ = rating_counts(r, categories=labels)
    tot = unit_agreement_stats(counts).sum(0)
    return float(chance_corrected_from_unit_stats(tot, "ac1"))
