"""`rank_systems`: a leaderboard with bootstrap intervals and rank intervals."""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix

from rubrictools.deprecation import adapted, renamed
from rubrictools.leaderboard.bootstrap import percentile_ci, resample_counts
from rubrictools.leaderboard.bradley_terry import components, degenerate, fit, online_elo, win_matrix
from rubrictools.leaderboard.table import Games, games_of
from rubrictools.metrics import with_ci_level
from rubrictools.metrics.resampling import check_resampling
from rubrictools.stack import user_stacklevel

__all__ = ["rank_systems"]


def _bt_stack(g: Games, counts: np.ndarray) -> np.ndarray:
    """``(B, K, K)`` win matrices of the cluster resamples (``counts``: ``(B, m)`` draws)."""
    k = g.k
    flat_a = g.i * k + g.j
    flat_b = g.j * k + g.i
    # per-cluster contributions as a sparse (m, K*K) matrix, then one product for all resamples
    rows = np.concatenate([g.c, g.c])
    cols = np.concatenate([flat_a, flat_b])
    vals = np.concatenate([g.s, 1.0 - g.s])
    per_cluster = coo_matrix((vals, (rows, cols)), shape=(g.m, k * k)).tocsc()
    return np.asarray((per_cluster.T @ counts.T).T).reshape(-1, k, k)


def _check_connected(g: Games, w: np.ndarray, regularization: float) -> None:
    n_weak, labels = components(w, strong=False)
    if n_weak > 1:
        groups = [[g.names[x] for x in np.flatnonzero(labels == c)] for c in range(n_weak)]
        raise ValueError(
            f"the systems fall into {n_weak} groups never compared with each other {groups}; ratings across "
            "groups are not identified: rank each group on its own (filter prefs) or add comparisons between them"
        )
    if regularization == 0 and components(w, strong=True)[0] > 1:
        wins, games = w.sum(axis=1), (w + w.T).sum(axis=1)
        never = [g.names[x] for x in np.flatnonzero((wins == 0) | (wins == games))]
        raise ValueError(
            "the maximum-likelihood ratings are infinite: some systems never lost or never won against the rest"
            + (f" ({never})" if never else "")
            + "; pass regularization= (e.g. 1e-3, a weak Gaussian prior) to get finite ratings"
        )


def _bt(g: Games, counts: np.ndarray, regularization: float) -> tuple[np.ndarray, np.ndarray, int]:
    w = win_matrix(g.i, g.j, g.s, g.k)
    _check_connected(g, w, regularization)
    theta = fit(w, regularization=regularization)
    stack = _bt_stack(g, counts)
    bad = degenerate(stack) if regularization == 0 else np.zeros(stack.shape[0], dtype=bool)
    boot = np.full((stack.shape[0], g.k), np.nan)
    if (~bad).any():
        boot[~bad] = fit(stack[~bad], regularization=regularization, start=theta)
    return theta, boot, int(bad.sum())


def _anchor(theta: np.ndarray, names: list[str], anchor: str | None) -> np.ndarray:
    """The shift putting the anchor (or the mean) at zero, per row of ``theta``."""
    if anchor is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a dropped (all-NaN) resample stays NaN
            return np.nanmean(theta, axis=-1, keepdims=True)
    return theta[..., [names.index(anchor)]]


@adapted(renamed(n_boot="n_resamples"))
def rank_systems(
    prefs: Any,
    *,
    method: Literal["bradley_terry", "elo"] = "bradley_terry",
    criterion: str | None = None,
    judge: str | None = None,
    anchor: str | None = None,
    init: float = 1000.0,
    scale: float = 400.0,
    base: float = 10.0,
    regularization: float = 0.0,
    k_factor: float = 4.0,
    n_resamples: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
) -> pl.DataFrame:
    """Rate and rank systems from a preference table, with bootstrap and rank intervals.

    ``method="bradley_terry"`` (default, order-free): maximum likelihood of
    ``P(i beats j) = 1 / (1 + base ** ((R_j - R_i) / scale))``, ties as half a win each, as
    Chatbot Arena computes its ratings; the ratings are reported on the Elo scale
    ``R = init + scale / ln(base) * (theta - theta_anchor)`` (``anchor=None``: the mean
    rating is ``init``). Resamples draw whole prompts (``id``) with replacement, so
    comparisons of one prompt stay together. ``method="elo"``: classic online Elo
    (``k_factor``) in the table's row order; its resamples draw single comparisons in random
    order (Elo depends on the order; prefer Bradley-Terry).

    A comparison graph in disconnected parts is an error (ratings across parts mean
    nothing); so is a system that never lost or never won, unless ``regularization`` > 0
    adds a Gaussian prior ``(lambda / 2) ||theta||^2``. Resamples whose MLE is infinite are
    dropped from the intervals, counted in ``n_degenerate`` (with a warning).

    Parameters
    ----------
    prefs
        A preference table (:func:`rubrictools.grade_pairs` or
        :func:`rubrictools.preferences_from_scores`): ``id, system_a, system_b, value`` (or
        ``preferred``); error rows (null ``value``) are left out.
    method
        ``"bradley_terry"`` (default) or ``"elo"``, as above.
    criterion, judge
        The slice of ``prefs`` to rank when it has ``criterion`` / ``judge`` columns holding
        several values (one must then be chosen; ``None`` when there is one or no such column).
    anchor
        A system whose rating is pinned at ``init`` (``None``: the mean rating is ``init``).
    init, scale, base
        The Elo scale of the ratings: ``init`` (1000) is the anchor's rating, or the mean
        rating without one (and every system's starting rating with ``"elo"``); a rating gap of
        ``scale`` (400) means odds of ``base`` (10) to 1. ``scale`` must be > 0 and ``base`` > 1.
    regularization
        ``lambda`` of the Gaussian prior on the Bradley-Terry ``theta`` (default 0: plain
        maximum likelihood); > 0 gives finite ratings to systems that never lost or never won.
    k_factor
        The Elo update step of ``method="elo"`` (default 4).
    n_resamples, ci, seed
        The bootstrap's resamples (at least 1); the interval level (written to the table's
        ``ci_level`` column); its seed (``0`` by default: identical calls give identical
        intervals; ``None`` draws afresh).

    Returns
    -------
    polars.DataFrame
        One row per system, best first: ``system, rating, ci_low, ci_high, ci_level, rank``
        (1 = best), ``rank_best`` / ``rank_worst`` (the rank interval: 1 + the number of systems
        whose interval lies entirely above, K - the number entirely below), ``games``, ``wins``
        (ties count half), ``n_degenerate``.

    Example
    -------
    >>> import polars as pl, rubrictools as rt
    >>> prefs = pl.DataFrame({"id": [1, 2, 3, 4], "system_a": ["x", "x", "y", "x"],
    ...                       "system_b": ["y", "y", "z", "z"], "value": [1.0, 0.0, 1.0, 0.5]})
    >>> rt.rank_systems(prefs, n_resamples=50, regularization=0.01)["system"].to_list()
    ['y', 'x', 'z']
    """
    check_resampling(n_resamples=n_resamples, ci=ci, seed=seed, least=2)
    if method not in ("bradley_terry", "elo"):
        raise ValueError(f"method must be 'bradley_terry' or 'elo'; got {method!r}")
    if n_resamples < 1 or not regularization >= 0 or scale <= 0 or base <= 1:
        raise ValueError("n_resamples must be >= 1, regularization >= 0, scale > 0 and base > 1")
    g = games_of(prefs, criterion=criterion, judge=judge)
    if g.k < 2:
        raise ValueError(f"ranking needs comparisons between at least 2 systems; found {g.names}")
    if anchor is not None and anchor not in g.names:
        raise ValueError(f"anchor={anchor!r} is not a compared system; systems: {g.names}")
    rng = np.random.default_rng(seed)
    if method == "bradley_terry":
        theta, boot, n_bad = _bt(g, resample_counts(g.m, n_resamples, rng), regularization)
        factor = scale / np.log(base)
        rating = init + factor * (theta - _anchor(theta, g.names, anchor)[..., 0])
        boot_r = init + factor * (boot - _anchor(boot, g.names, anchor))
    else:
        rating = online_elo(g.i, g.j, g.s, g.k, k_factor=k_factor, scale=scale, base=base, init=init)
        order = rng.integers(0, g.n, size=(n_resamples, g.n))
        boot_r = online_elo(g.i, g.j, g.s, g.k, order=order, k_factor=k_factor, scale=scale, base=base, init=init)
        if anchor is not None:
            a = g.names.index(anchor)
            rating, boot_r = rating - rating[a] + init, boot_r - boot_r[:, [a]] + init
        n_bad = 0
    if n_bad:
        warnings.warn(
            f"{n_bad} of {n_resamples} resamples had infinite ratings (a system never lost or never won in them) and "
            "were left out of the intervals; pass regularization= to keep them",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
    lo, hi = percentile_ci(boot_r, ci)
    return with_ci_level(_table(g, rating, lo, hi, n_bad), ci)


def _table(g: Games, rating: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_bad: int) -> pl.DataFrame:
    rank = 1 + (rating[None, :] > rating[:, None]).sum(axis=1)
    above = (lo[None, :] > hi[:, None]).sum(axis=1)  # systems surely better
    below = (hi[None, :] < lo[:, None]).sum(axis=1)  # systems surely worse
    w = win_matrix(g.i, g.j, g.s, g.k)
    out = pl.DataFrame(
        {
            "system": g.names,
            "rating": rating,
            "ci_low": lo,
            "ci_high": hi,
            "rank": rank.astype(np.int64),
            "rank_best": (1 + above).astype(np.int64),
            "rank_worst": (g.k - below).astype(np.int64),
            "games": (w + w.T).sum(axis=1),
            "wins": w.sum(axis=1),
            "n_degenerate": [n_bad] * g.k,
        }
    )
    return out.sort("rating", descending=True, maintain_order=True)
