"""Prediction-powered inference for a mean: the formulas, on numpy arrays.

Notation: ``y`` human values on the ``n`` labelled items, ``f`` the judge's predictions on the
same items, ``f_u`` the judge's predictions on the ``N`` unlabelled items.

- Classical (human-only): ``mean(y)``, SE ``sd(y) / sqrt(n)``.
- Naive (judge-only): the mean of ``f`` and ``f_u`` together, SE ``sd / sqrt(n + N)``; biased
  whenever the judge is.
- PPI with power tuning (Angelopoulos et al., Science 2023; PPI++, Angelopoulos, Duchi &
  Zrnic 2023): ``theta = lam * mean(f_u) + mean(y - lam * f)``, SE
  ``sqrt(lam^2 var(f_u) / N + var(y - lam f) / n)`` (population variances). ``lam = 1`` is
  plain PPI, ``lam = 0`` the classical estimate. The tuned ``lam`` is PPI++'s plug-in
  ``cov(y, f) / ((1 + n / N) var(f and f_u pooled))``, clipped to [0, 1], with the same estimators as
  ``ppi_py.ppi_mean_ci`` (covariance over n, variance with ddof 1 over the pooled predictions).
- Labels drawn with known inclusion probabilities ``pi`` (active inference, Zrnic & Candès
  2024): over all N items, ``z_i = lam f_i + (y_i - lam f_i) xi_i / pi_i`` (``xi_i``: item i
  was labelled); ``theta = mean(z)``, SE ``sd(z) / sqrt(N)``; unbiased for any ``pi > 0``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

__all__ = ["Estimate", "classical", "interval", "ipw", "naive", "ppi", "tuned_lambda", "tuned_lambda_ipw"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error and normal ``ci`` interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    lam: float = float("nan")


def interval(theta: float, se: float, ci: float, lam: float = float("nan")) -> Estimate:
    """``theta`` with its normal ``ci`` interval ``theta +- z se``."""
    z = _z(ci)
    return Estimate(float(theta), float(se), float(theta - z * se), float(theta + z * se), float(lam))


@functools.lru_cache(maxsize=32)
def _z(ci: float) -> float:
    """The standard normal quantile ``z`` with ``P(|Z| < z) = ci`` (``norm.ppf(0.5 + ci / 2)``)."""
    return float(ndtri(0.5 + ci / 2))


def classical(y: np.ndarray, *, ci: float = 0.95) -> Estimate:
    """The human-only mean and its CLT interval."""
    return interval(y.mean(), y.std() / np.sqrt(y.size), ci, 0.0)


def naive(f: np.ndarray, *, ci: float = 0.95) -> Estimate:
    """The judge-only mean of ``f``, the predictions on every graded item (its interval
    ignores the judge's bias)."""
    return interval(f.mean(), f.std() / np.sqrt(f.size), ci)


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lam`` for a mean, clipped to [0, 1] (0 for a constant judge)."""
    n, big_n = y.size, f_u.size
    cov = float(((y - y.mean()) * (f - f.mean())).sum() / n)
    var = float(np.var(np.concatenate([f, f_u]), ddof=1))
    if var <= 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def ppi(y: np.ndarray, f: np.ndarray, f_u: np.ndarray, *, lam: float | None = None, ci: float = 0.95) -> Estimate:
    """The (power-tuned when ``lam`` is None) prediction-powered mean and its CLT interval."""
    lam = tuned_lambda(y, f, f_u) if lam is None else lam
    theta = lam * f_u.mean() + (y - lam * f).mean()
    se = np.sqrt(lam**2 * f_u.var() / f_u.size + (y - lam * f).var() / y.size)
    return interval(theta, se, ci, lam)


def tuned_lambda_ipw(y: np.ndarray, f: np.ndarray, labelled: np.ndarray, pi: np.ndarray) -> float:
    """The ``lam`` minimising ``var(z)`` of the inverse-probability estimator, clipped to [0, 1].

    ``y`` is any finite value where unlabelled (it is multiplied by zero)."""
    r = labelled / pi
    a, b = np.where(labelled, y, 0.0) * r, f * (1.0 - r)  # z = a + lam * b
    var_b = float(b.var())
    if var_b <= 0:
        return 0.0
    return float(np.clip(-np.cov(a, b, ddof=0)[0, 1] / var_b, 0.0, 1.0))


def ipw(
    y: np.ndarray, f: np.ndarray, labelled: np.ndarray, pi: np.ndarray, *, lam: float | None = None, ci: float = 0.95
) -> Estimate:
    """Prediction-powered mean over all N items when item i was labelled with probability ``pi[i]``."""
    lam = tuned_lambda_ipw(y, f, labelled, pi) if lam is None else lam
    z = lam * f + np.where(labelled, y - lam * f, 0.0) / pi
    return interval(z.mean(), z.std() / np.sqrt(z.size), ci, lam)
