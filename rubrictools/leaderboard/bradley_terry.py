"""Bradley-Terry maximum likelihood, batched over bootstrap resamples, and online Elo.

Bradley-Terry: P(i beats j) = sigma(theta_i - theta_j). With ``W[i, j]`` the wins of i over j
(a tie counts half a win for each side) and ``N = W + W.T``, the log-likelihood is

    l(theta) = sum_ij W_ij log sigma(theta_i - theta_j) - (lambda / 2) ||theta||^2

Its gradient is ``g_i = sum_j W_ij - N_ij sigma_ij - lambda theta_i`` and its negative
Hessian the graph Laplacian with weights ``N_ij sigma_ij (1 - sigma_ij)`` (plus ``lambda I``).
:func:`fit` takes Newton steps for a whole stack of win matrices at once (``numpy.linalg.solve``
on ``(B, K, K)``); with ``lambda = 0`` the ratings are fixed up to a constant, pinned by
mean zero (the ``11^T / K`` term, which leaves the solution unchanged).

The maximum-likelihood estimate exists (is finite) exactly when the "i beat j at least
partly" graph is strongly connected; :func:`degenerate` tells which matrices fail that.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

__all__ = ["components", "degenerate", "fit", "online_elo", "win_matrix"]


def win_matrix(i: np.ndarray, j: np.ndarray, s: np.ndarray, k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """``W[a, b]``: wins of a over b (A's share ``s`` to A, ``1 - s`` to B), optionally weighted."""
    w = np.ones_like(s) if weights is None else weights
    flat = np.bincount(i * k + j, weights=w * s, minlength=k * k) + np.bincount(
        j * k + i, weights=w * (1 - s), minlength=k * k
    )
    return flat.reshape(k, k)


def components(w: np.ndarray, *, strong: bool) -> tuple[int, np.ndarray]:
    """Connected components of the comparison graph (``strong``: of who-beat-whom)."""
    graph = csr_matrix(w > 0) if strong else csr_matrix((w + w.T) > 0)
    n, labels = connected_components(graph, directed=strong, connection="strong" if strong else "weak")
    return int(n), labels


def degenerate(w: np.ndarray) -> np.ndarray:
    """For a ``(B, K, K)`` stack: True where the MLE is infinite (not strongly connected)."""
    return np.array([components(m, strong=True)[0] > 1 for m in w], dtype=bool)


def fit(
    w: np.ndarray,
    *,
    regularization: float = 0.0,
    start: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> np.ndarray:
    """Bradley-Terry log-strengths for a ``(K, K)`` or ``(B, K, K)`` stack of win matrices.

    Damped Newton (no step moves a rating by more than 2 logits), all matrices at once, until
    every gradient is below ``tol`` times the number of games. Ratings have mean zero when
    ``regularization == 0``. Matrices whose MLE is infinite (see :func:`degenerate`) must be
    left out or regularised by the caller. ``start`` (e.g. the full-data fit, for bootstrap
    resamples) only saves iterations.
    """
    single = w.ndim == 2
    w = w[None] if single else w
    b, k, _ = w.shape
    pi, pj = np.triu_indices(k, 1)  # each unordered pair once: sigma_ji = 1 - sigma_ij
    n = w[:, pi, pj] + w[:, pj, pi]
    wins = w.sum(axis=2)
    inc = np.zeros((pi.size, k))
    inc[np.arange(pi.size), pi], inc[np.arange(pi.size), pj] = 1.0, -1.0  # (pairs, K) incidence
    theta = np.zeros((b, k)) if start is None else np.broadcast_to(start, (b, k)).astype(np.float64)
    pin = np.full((k, k), 1.0 / k) if regularization == 0 else regularization * np.eye(k)
    scale = np.maximum(n.sum(axis=1), 1.0)
    idx = np.arange(k)
    for _ in range(max_iter):
        sig = 0.5 * (1.0 + np.tanh(0.5 * (theta[:, pi] - theta[:, pj])))  # the logistic, without overflow
        # expected wins: n sigma to i, n (1 - sigma) to j
        expected = (n * sig) @ np.maximum(inc, 0) + (n * (1.0 - sig)) @ np.maximum(-inc, 0)
        g = wins - expected - regularization * theta
        if np.all(np.abs(g).max(axis=1) <= tol * scale):
            break
        lw = n * sig * (1.0 - sig)
        lap = np.zeros((b, k, k))
        lap[:, pi, pj] = -lw
        lap[:, pj, pi] = -lw
        lap[:, idx, idx] = lw @ np.abs(inc)
        step = np.linalg.solve(lap + pin, g[:, :, None])[:, :, 0]
        big = np.abs(step).max(axis=1, keepdims=True)
        theta = theta + step * np.minimum(1.0, 2.0 / np.maximum(big, 1e-300))
    if regularization == 0:
        theta = theta - theta.mean(axis=1, keepdims=True)
    return theta[0] if single else theta


def online_elo(
    i: np.ndarray,
    j: np.ndarray,
    s: np.ndarray,
    k: int,
    *,
    order: np.ndarray | None = None,
    k_factor: float = 4.0,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
) -> np.ndarray:
    """Classic sequential Elo over the games, in the given order or in each row of ``order``
    (``(B, n)`` game indices: one game sequence per resample, all updated together).

    ``R_a += k_factor * (s - E_a)``, ``E_a = 1 / (1 + base ** ((R_b - R_a) / scale))``; the
    result depends on the order of the games (Bradley-Terry does not).
    """
    seq = np.arange(s.size)[None] if order is None else order
    r = np.full((seq.shape[0], k), init, dtype=np.float64)
    rows = np.arange(seq.shape[0])
    for t in range(seq.shape[1]):  # sequential by definition; vectorised across resamples
        g = seq[:, t]
        a, bb, out = i[g], j[g], s[g]
        ra, rb = r[rows, a], r[rows, bb]
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        r[rows, a] = ra + k_factor * (out - ea)
        r[rows, bb] = rb - k_factor * (out - ea)
    return r[0] if order is None else r
