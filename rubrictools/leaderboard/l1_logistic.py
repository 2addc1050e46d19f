"""L1-penalised logistic regression on soft targets, fitted to its optimum, and the choice of
its penalty by cross-validation: the model behind length-controlled win rates.

The objective (liblinear's, without intercept; ``s_i`` a row's weight, ``y_i`` in [0, 1]):

    F(w) = ||w||_1 + C * sum_i s_i * (log(1 + exp(z_i)) - y_i * z_i),   z = X w.

:func:`fit_l1_logistic` minimises it by proximal Newton steps (each step solves the
L1-penalised quadratic model exactly, over the sign patterns of the few coefficients, then
backtracks) until the
smallest subgradient is below ``1e-10`` of the loss term's scale (``C`` times the rows' weight):
the optimum to the last digits, where a solver at
default tolerances stops short of it.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import expit

__all__ = ["CS", "choose_c", "fit_l1_logistic", "group_folds", "objective"]

CS = np.logspace(-4, 4, 10)
"""The penalties tried: ``logspace(-4, 4, 10)``, as AlpacaEval's ``LogisticRegressionCV``."""


def objective(w: np.ndarray, x: np.ndarray, y: np.ndarray, c: float, s: np.ndarray | None = None) -> float:
    """``F(w)`` of the module docstring.

    >>> round(objective(np.zeros(1), np.ones((2, 1)), np.array([1.0, 0.0]), 1.0), 6)  # 2 log 2
    1.386294
    """
    z = x @ w
    loss = np.logaddexp(0, z) - y * z
    return float(np.abs(w).sum() + c * (loss if s is None else s * loss).sum())


def _soft(v: float, t: float) -> float:
    return float(np.sign(v) * max(abs(v) - t, 0.0))


def _newton_direction(w: np.ndarray, g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``argmin_d g.d + d'Hd/2 + ||w + d||_1``, exactly: for each sign pattern of ``u = w + d``
    (each coefficient negative, zero or positive; 27 patterns for 3 features) the stationary
    point of the then smooth model, kept when its signs agree, and the best of those. Exact
    where coordinate descent crawls: with nearly collinear features (a system whose answers
    are all far longer makes ``tanh(d / sd)`` nearly constant, like the intercept)."""

    def model(u: np.ndarray) -> float:
        d = u - w
        return float(g @ d + 0.5 * d @ h @ d + np.abs(u).sum())

    best, best_value = w.copy(), model(w)
    hw = h @ w
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=w.size):
        sigma = np.array(signs)
        on = sigma != 0
        u = np.zeros_like(w)
        if on.any():
            u[on] = np.linalg.solve(h[np.ix_(on, on)], hw[on] - g[on] - sigma[on])
            if np.any(np.sign(u[on]) != sigma[on]):
                continue
        value = model(u)
        if value < best_value:
            best, best_value = u, value
    return best - w


def _subgradient(w: np.ndarray, g: np.ndarray) -> float:
    """The size of the smallest subgradient of ``F`` at ``w`` (0 at the optimum)."""
    at_zero = np.maximum(np.abs(g) - 1.0, 0.0)
    return float(np.max(np.where(w != 0, np.abs(g + np.sign(w)), at_zero), initial=0.0))


def fit_l1_logistic(x: np.ndarray, y: np.ndarray, c: float, s: np.ndarray | None = None) -> np.ndarray:
    """The ``w`` minimising ``F`` (module docstring), to a relative subgradient below ``1e-10``.

    >>> x = np.column_stack([np.ones(4), [-1.0, -0.5, 0.5, 1.0]])
    >>> w = fit_l1_logistic(x, np.array([0.2, 0.4, 0.6, 0.8]), 100.0)
    >>> [round(float(v), 4) for v in w]  # no intercept is wanted, and none is kept
    [0.0, 1.2156]
    """
    weight = np.ones(y.size) if s is None else s
    tolerance = 1e-10 * max(1.0, c * float(weight.sum()))  # the loss term's scale: C times the rows
    w = np.zeros(x.shape[1])
    for _ in range(200):
        p = expit(x @ w)
        g = c * x.T @ (weight * (p - y))
        if _subgradient(w, g) < tolerance:
            break
        h = c * (x.T * (weight * p * (1 - p))) @ x + 1e-12 * np.eye(w.size)
        d = _newton_direction(w, g, h)
        before = objective(w, x, y, c, s)
        decrease = g @ d + np.abs(w + d).sum() - np.abs(w).sum()
        step = 1.0
        while objective(w + step * d, x, y, c, s) > before + 1e-4 * step * decrease and step > 1e-12:
            step /= 2
        if step <= 1e-12:
            break  # no descent left at double precision: the optimum
        w = w + step * d
    return w


def group_folds(n: int, k: int) -> np.ndarray:
    """The fold of each of ``n`` rows when every row is its own group of equal size, as
    scikit-learn's ``GroupKFold`` (1.6 and later) deals them: the last row to the first fold,
    the one before to the second, and so on round the ``k`` folds.

    >>> group_folds(7, 3).tolist()
    [0, 2, 1, 0, 2, 1, 0]
    """
    return (n - 1 - np.arange(n)) % k


def choose_c(x: np.ndarray, y: np.ndarray, s: np.ndarray | None = None, *, folds: int = 5) -> float:
    """The ``C`` in :data:`CS` with the lowest held-out log-loss of the soft targets, summed over
    ``folds`` folds (:func:`group_folds`); a fold's loss is its mean of ``s_i`` times the
    cross-entropy of ``y_i`` and the prediction, clipped to ``[1e-15, 1 - 1e-15]``. Ties go to
    the smallest ``C``.
    """
    k = min(folds, y.size)
    fold = group_folds(y.size, k)
    weight = np.ones(y.size) if s is None else s
    totals = []
    for c in CS:
        total = 0.0
        for f in range(k):
            train, test = fold != f, fold == f
            w = fit_l1_logistic(x[train], y[train], c, None if s is None else s[train])
            q = np.clip(expit(x[test] @ w), 1e-15, 1 - 1e-15)
            ce = -(y[test] * np.log(q) + (1 - y[test]) * np.log(1 - q))
            total += float(np.mean(weight[test] * ce))
        totals.append(total)
    return float(CS[int(np.argmin(totals))])
