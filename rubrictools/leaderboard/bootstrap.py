"""Cluster bootstrap helpers: resample prompts (clusters), not single comparisons.

Comparisons of the same prompt are correlated (a hard prompt is hard for every system), so
intervals resample whole prompts, as the issue tracker of every arena-style leaderboard
eventually asks for. Everything is vectorised: one ``(n_resamples, n_clusters)`` count matrix.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["cluster_codes", "percentile_ci", "ratio_ci", "resample_counts"]


def cluster_codes(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes ``0..m-1`` of the cluster ids, and ``m``."""
    _, codes = np.unique(ids, return_inverse=True)
    return codes.astype(np.int64), int(codes.max()) + 1 if codes.size else 0


def resample_counts(m: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_resamples, m)`` counts: how often each of ``m`` clusters is drawn in each resample
    (``m`` draws with replacement)."""
    if m == 0:
        return np.zeros((n_resamples, 0))
    draws = (
        rng.integers(0, m, size=(n_resamples, m), dtype=np.int64)
        + (np.arange(n_resamples, dtype=np.int64) * m)[:, None]
    )
    return np.bincount(draws.ravel(), minlength=n_resamples * m).reshape(n_resamples, m).astype(np.float64)


def percentile_ci(samples: np.ndarray, ci: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The central ``ci`` percentile interval of ``samples`` along ``axis`` (NaN samples ignored)."""
    lo, hi = 100 * (1 - ci) / 2, 100 * (1 + ci) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN slice gives NaN bounds, as it should
        return np.nanpercentile(samples, lo, axis=axis), np.nanpercentile(samples, hi, axis=axis)


def ratio_ci(counts: np.ndarray, num: np.ndarray, den: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval of ``sum(num) / sum(den)`` over the cluster resamples ``counts``
    (:func:`resample_counts`; one entry of ``num``/``den`` per cluster); a resample with
    ``sum(den) == 0`` is NaN and left out."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = (counts @ num) / (counts @ den)
    lo, hi = percentile_ci(rates, ci)
    return float(lo), float(hi)
