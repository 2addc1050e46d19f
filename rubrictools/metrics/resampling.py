"""Vectorised cluster bootstrap: all resamples at once, metrics from sufficient statistics.

A :class:`Kernel` describes one or more metrics as functions of *row weights*: the value
on a resample is the value on the data set in which row *i* appears ``w_i`` times. Most
kernels are *linear*: the metrics depend on the data only through the column sums of a
per-row statistics matrix ``stats`` (``(n_rows, S)``: one-hot confusion cells, sums of
``d`` and ``d^2``...), so ``B`` resamples cost one ``(B, n_clusters) @ (n_clusters, S)``
matrix product. Rank statistics (Spearman, Kendall) use a generic kernel that receives the
``(B, n_rows)`` weight matrix.

Resampling is by *cluster* (the submission): every row of a drawn submission comes along,
so the criteria (and raters) of one submission stay together. Draws are multinomial
counts per cluster, optionally within strata; intervals are percentile or BCa (bias
corrected and accelerated, acceleration from a leave-one-cluster-out jackknife).
Resamples on which a metric is undefined (e.g. kappa with one class) are counted as
degenerate and left out of the interval; with fewer than half of them defined the
interval is NaN.

>>> import numpy as np
>>> x = np.array([1.0, 2.0, 3.0, 4.0])
>>> k = Kernel(("mean",), lambda t: {"mean": t[..., 1] / t[..., 0]}, stats=np.column_stack([np.ones(4), x]))
>>> w = cluster_weights(4, 200, seed=0)
>>> res = bootstrap(k, np.arange(4), w)
>>> res["mean"].value, res["mean"].low < 2.5 < res["mean"].high
(2.5, True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.deprecation import adapted, renamed
from rubrictools.stack import user_stacklevel

__all__ = [
    "Interval",
    "Kernel",
    "bootstrap",
    "check_names",
    "check_resampling",
    "cluster_weights",
    "interval",
    "p_value",
    "with_ci_level",
]

Method = Literal["percentile", "bca"]

_MAX_JACKKNIFE = 2000
_BLOCK_ELEMS = 8_000_000


@dataclass(frozen=True)
class Kernel:
    """Metrics as functions of row weights.

    ``finish`` maps summed statistics ``(B, S)`` (linear kernel, ``stats`` given) or a row
    weight matrix ``(B, n_rows)`` (generic kernel, ``stats=None``, ``n_rows`` given) to a dict
    ``name -> (B,)`` array with NaN where undefined.
    """

    names: tuple[str, ...]
    finish: Callable[[np.ndarray], dict[str, np.ndarray]]
    stats: np.ndarray | None = None
    n_rows: int | None = None
    point_fn: Callable[[], dict[str, float]] | None = None

    def __post_init__(self) -> None:
        if self.stats is None and self.n_rows is None:
            raise ValueError("a generic kernel needs n_rows")

    @property
    def rows(self) -> int:
        return int(self.stats.shape[0]) if self.stats is not None else int(self.n_rows)  # type: ignore[arg-type]  # n_rows is set whenever stats is None

    def point(self) -> dict[str, float]:
        """Metric values on the data as given (all weights 1; ``point_fn`` when the kernel has
        a cheaper exact formula for that case, e.g. Kendall's O(n log n))."""
        if self.point_fn is not None:
            return self.point_fn()
        if self.stats is not None:
            out = self.finish(self.stats.sum(0)[None, :])
        else:
            out = self.finish(np.ones((1, self.rows)))
        return {k: float(np.asarray(out[k]).reshape(-1)[0]) for k in self.names}


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval."""

    value: float
    low: float = float("nan")
    high: float = float("nan")
    n_resamples: int = 0
    n_degenerate: int = 0
    boot: np.ndarray | None = None


@adapted(renamed(n_boot="n_resamples"))
def cluster_weights(
    n_clusters: int,
    n_resamples: int,
    *,
    seed: int | np.random.Generator | None = 0,
    strata: Any = None,
) -> np.ndarray:
    """Multinomial resampling counts ``(n_resamples, n_clusters)``: row *b* says how often each
    cluster is drawn in resample *b* (each row sums to ``n_clusters``; within each stratum to
    the stratum's size when ``strata`` gives a label per cluster).

    >>> cluster_weights(3, 2, seed=1).sum(1).tolist()
    [3.0, 3.0]
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if strata is None:
        if n_clusters == 0:
            return np.zeros((n_resamples, 0))
        return _draw_counts(rng, n_resamples, n_clusters)
    s = np.asarray(strata)
    if s.shape[0] != n_clusters:
        raise ValueError("strata must give one label per cluster")
    _, code = np.unique(s, return_inverse=True)
    w = np.zeros((n_resamples, n_clusters))
    for g in range(code.max() + 1 if code.size else 0):
        members = np.flatnonzero(code == g)
        m = members.size
        w[:, members] = _draw_counts(rng, n_resamples, m)
    return w


def _draw_counts(rng: np.random.Generator, n_resamples: int, n: int) -> np.ndarray:
    """``(n_resamples, n)`` counts of ``n`` uniform draws with replacement per row."""
    draws = rng.integers(0, n, size=(n_resamples, n))
    flat = (draws + (np.arange(n_resamples) * n)[:, None]).reshape(-1)
    return np.bincount(flat, minlength=n_resamples * n).reshape(n_resamples, n).astype(float)


def _cluster_sums(stats: np.ndarray, local: np.ndarray, n_local: int) -> np.ndarray:
    out = np.zeros((n_local, stats.shape[1]))
    np.add.at(out, local, stats)
    return out


def _blocked(kernel: Kernel, n: int, weight_rows: Callable[[int, int], np.ndarray]) -> dict[str, np.ndarray]:
    """Evaluate a generic kernel on ``n`` weight rows, built ``weight_rows(lo, hi)`` a block at
    a time so that no block holds more than ``_BLOCK_ELEMS`` weights."""
    step = max(1, _BLOCK_ELEMS // max(kernel.rows, 1))
    parts: dict[str, list[np.ndarray]] = {k: [] for k in kernel.names}
    for lo in range(0, n, step):
        out = kernel.finish(weight_rows(lo, min(lo + step, n)))
        for k in kernel.names:
            parts[k].append(np.asarray(out[k]))
    return {k: np.concatenate(v) for k, v in parts.items()}


def evaluate(kernel: Kernel, row_cluster: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Kernel values for each row of cluster ``weights`` ``(B, n_clusters)``; ``row_cluster``
    gives each row's cluster index (columns of ``weights``)."""
    present, local = np.unique(row_cluster, return_inverse=True)
    wl = weights[:, present]
    if kernel.stats is not None:
        tot = wl @ _cluster_sums(kernel.stats, local, present.size)
        return kernel.finish(tot)
    return _blocked(kernel, weights.shape[0], lambda lo, hi: wl[lo:hi][:, local])


def jackknife(kernel: Kernel, row_cluster: np.ndarray, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Leave-one-cluster-out values (grouped into at most 2,000 blocks for large data)."""
    present, local = np.unique(row_cluster, return_inverse=True)
    n = present.size
    if n > _MAX_JACKKNIFE:
        block = np.random.default_rng(seed).permutation(n) % _MAX_JACKKNIFE
        local = block[local]
        n = _MAX_JACKKNIFE
    if kernel.stats is not None:
        sums = _cluster_sums(kernel.stats, local, n)
        return kernel.finish(sums.sum(0)[None, :] - sums)

    def leave_out(lo: int, hi: int) -> np.ndarray:
        w = np.ones((hi - lo, kernel.rows))
        rows_in = (local >= lo) & (local < hi)
        w[local[rows_in] - lo, np.flatnonzero(rows_in)] = 0.0
        return w

    return _blocked(kernel, n, leave_out)


def p_value(value: float, boot: np.ndarray) -> float:
    """Two-sided bootstrap p-value of ``value`` against 0: the share of finite replicates at
    least as far from ``value`` as ``value`` is from 0, ``(1 + #{|b - v| >= |v|}) / (B + 1)``
    (NaN when ``value`` or every replicate is not finite).

    >>> p_value(0.5, np.array([0.4, 0.6, -0.1, 1.2]))  # (1 + 2) / (4 + 1)
    0.6
    """
    boot = np.asarray(boot, dtype=float)
    ok = np.isfinite(boot)
    if not ok.any() or not np.isfinite(value):
        return float("nan")
    return float((1 + np.sum(np.abs(boot[ok] - value) >= abs(value) - 1e-12)) / (ok.sum() + 1))


def interval(
    value: float,
    boot: np.ndarray,
    *,
    ci: float = 0.95,
    method: Method = "percentile",
    jack: np.ndarray | None = None,
) -> Interval:
    """Percentile or BCa interval from bootstrap replicates (NaN replicates are degenerate).

    BCa: ``z0 = Phi^-1(#(theta* < theta) + #(theta* = theta) / 2) / B)``, acceleration
    ``a = sum(d^3) / (6 (sum d^2)^1.5)`` with ``d = mean(jack) - jack``, and the interval is
    the ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` quantiles of the replicates.

    ``ci``: the interval level.
    """
    from scipy.special import ndtr, ndtri

    if not 0 < ci < 1:
        raise ValueError("ci must be in (0, 1)")
    boot = np.asarray(boot, dtype=float)
    ok = np.isfinite(boot)
    valid = boot[ok]
    n_deg = int((~ok).sum())
    nan = float("nan")
    if valid.size == 0 or valid.size < 0.5 * boot.size or not np.isfinite(value):
        return Interval(value, nan, nan, int(boot.size), n_deg, boot)
    alpha = (1 - ci) / 2
    if method == "percentile":
        lo, hi = np.quantile(valid, [alpha, 1 - alpha])
    elif method == "bca":
        b = valid.size
        prop = (np.sum(valid < value) + 0.5 * np.sum(valid == value)) / b
        prop = min(max(prop, 0.5 / b), 1 - 0.5 / b)
        z0 = ndtri(prop)
        a = 0.0
        if jack is not None:
            j = np.asarray(jack, float)
            j = j[np.isfinite(j)]
            if j.size > 2:
                d = j.mean() - j
                den = 6.0 * np.sum(d * d) ** 1.5
                a = float(np.sum(d**3) / den) if den > 0 else 0.0
        z = ndtri(np.array([alpha, 1 - alpha]))
        q = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
        lo, hi = np.quantile(valid, np.clip(q, 0, 1))
    else:
        raise ValueError("method must be 'percentile' or 'bca'")
    return Interval(value, float(lo), float(hi), int(boot.size), n_deg, boot)


def bootstrap(
    kernel: Kernel,
    row_cluster: np.ndarray,
    weights: np.ndarray | None,
    *,
    ci: float = 0.95,
    method: Method = "percentile",
) -> dict[str, Interval]:
    """Point estimates and intervals for every metric of ``kernel``.

    ``weights`` from :func:`cluster_weights` (shared across kernels so that all metrics of
    one analysis use the same resamples); ``None`` for point estimates only.

    ``ci``: the interval level.
    """
    point = kernel.point()
    if weights is None or weights.shape[0] == 0:
        return {k: Interval(v) for k, v in point.items()}
    boot = evaluate(kernel, np.asarray(row_cluster), weights)
    jack = jackknife(kernel, np.asarray(row_cluster)) if method == "bca" else None
    return {
        k: interval(point[k], boot[k], ci=ci, method=method, jack=None if jack is None else jack[k])
        for k in kernel.names
    }


def with_ci_level(frame: pl.DataFrame, ci: float, *, after: str = "ci_high") -> pl.DataFrame:
    """``frame`` with a ``ci_level`` column (the interval's level, e.g. 0.95) after ``after``,
    so a chart or a reader of the table says the level the intervals were computed at.

    >>> import polars as pl
    >>> with_ci_level(pl.DataFrame({"value": [0.5], "ci_low": [0.4], "ci_high": [0.6], "n": [9]}), 0.9).columns
    ['value', 'ci_low', 'ci_high', 'ci_level', 'n']
    """
    cols = [c for c in frame.columns if c != "ci_level"]
    at = cols.index(after) + 1 if after in cols else len(cols)
    out = frame.with_columns(pl.lit(float(ci), dtype=pl.Float64).alias("ci_level"))
    return out.select(*cols[:at], "ci_level", *cols[at:])


def check_resampling(*, n_resamples: Any = 0, ci: Any = 0.95, seed: Any = 0, least: int = 0) -> None:
    """Refuse resampling settings with an error naming the field, before any work: ``n_resamples``
    an int >= ``least`` and not 1 (0: point estimates only, where a function offers it; one
    resample is no interval), ``ci`` a level in
    (0, 1), ``seed`` an int (or None for a fresh draw, or a numpy Generator).

    >>> check_resampling(n_resamples=-1)
    Traceback (most recent call last):
    ...
    ValueError: n_resamples must be an int >= 0 (resamples of the bootstrap), got -1
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < least:
        raise ValueError(f"n_resamples must be an int >= {least} (resamples of the bootstrap), got {n_resamples!r}")
    if n_resamples == 1:
        raise ValueError(
            "n_resamples=1 would give an interval from one resample, both ends the same value: pass 0 for "
            "point estimates only, or enough resamples for the tails (the default is 1000)"
        )
    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not 0 < ci < 1:
        raise ValueError(f"ci must be an interval level in (0, 1), e.g. 0.95; got {ci!r}")
    enough = math.ceil(2 / (1 - ci) - 1e-9)  # each tail of the interval holds at least one resample
    if 0 < n_resamples < enough:
        warnings.warn(
            f"n_resamples={n_resamples} leaves less than one resample in each tail of a {ci:.0%} interval: its "
            f"ends are the extreme resamples and may not even hold the estimate; use at least {enough} "
            "(the default is 1000)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    ok_seed = (
        seed is None or isinstance(seed, np.random.Generator) or (isinstance(seed, (int, np.integer)) and seed >= 0)
    )
    if isinstance(seed, bool) or not ok_seed:
        raise ValueError(f"seed must be an int >= 0 (or None for a fresh draw each call), got {seed!r}")


def check_names(names: Any) -> None:
    """Two different labels for the two sides of a comparison (they name its columns).

    >>> check_names(("a", "a"))
    Traceback (most recent call last):
    ...
    ValueError: names must be two different strings (they name the columns of each side), got ('a', 'a')
    """
    ok = isinstance(names, (tuple, list)) and len(names) == 2 and all(isinstance(n, str) and n for n in names)
    if not ok or names[0] == names[1]:
        raise ValueError(f"names must be two different strings (they name the columns of each side), got {names!r}")
