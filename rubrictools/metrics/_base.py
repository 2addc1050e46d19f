"""Input coercion shared by the metric functions, and the :class:`Estimate` result type.

Conventions used by every metric in :mod:`rubrictools.metrics`:

* 1-D inputs may be lists, numpy arrays, polars or pandas Series;
* missing values are ``None``, ``NaN`` or polars nulls; pairwise metrics drop every pair in
  which either side is missing (``nan_policy="omit"``) or raise (``nan_policy="raise"``);
* a metric that is mathematically undefined for the data (one class only, zero variance,
  fewer than two pairs) returns ``nan``, never raises and never returns a made-up 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

NanPolicy = Literal["omit", "raise"]

__all__ = ["Estimate", "NanPolicy", "as_1d", "encode_labels", "paired", "ratings_matrix"]


class Estimate(float):
    """A float carrying inference extras (``pvalue``, ``se``, ...) as attributes.

    It *is* the point estimate, so arithmetic, comparisons and formatting work as for a
    float; the extras are read as attributes:

    >>> e = Estimate(0.5, pvalue=0.01, se=0.1)
    >>> e + 1, e.pvalue, e.se
    (1.5, 0.01, 0.1)
    """

    extras: dict[str, float]

    def __new__(cls, value: float, **extras: float) -> Estimate:
        self = super().__new__(cls, float(value))
        self.extras = {k: float(v) for k, v in extras.items()}
        return self

    def __getattr__(self, name: str) -> float:
        extras = self.__dict__.get("extras", {})
        if name in extras:
            return extras[name]
        raise AttributeError(f"Estimate has no attribute {name!r} (has {sorted(extras)})")

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:.6g}" for k, v in self.extras.items())
        return f"Estimate({float(self)!r}{', ' + inner if inner else ''})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_estimate, (float(self), self.extras))


def _rebuild_estimate(value: float, extras: dict[str, float]) -> Estimate:
    return Estimate(value, **extras)


def is_missing(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.isnan(a)
    if a.dtype.kind == "O":
        return np.array([x is None or (isinstance(x, float) and x != x) for x in a], dtype=bool)
    return np.zeros(a.shape, dtype=bool)


def as_1d(x: Any, *, name: str = "x") -> np.ndarray:
    """A 1-D numpy array from a list, array, polars or pandas Series (nulls become NaN/None)."""
    mod = type(x).__module__
    if mod.startswith("polars") or mod.startswith("pandas"):
        x = x.to_numpy()
    a = np.asarray(x)
    if a.ndim == 0:
        raise ValueError(f"{name}: expected a 1-D sequence, got a scalar")
    if a.ndim != 1:
        a = a.reshape(-1) if 1 in a.shape and a.ndim == 2 else a
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D sequence, got shape {a.shape}")
    return a


def paired(
    a: Any,
    b: Any,
    *,
    names: tuple[str, str] = ("y_true", "y_pred"),
    numeric: bool = False,
    nan_policy: NanPolicy = "omit",
    sample_weight: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Two aligned 1-D arrays with missing pairs removed (or an error, per ``nan_policy``)."""
    x, y = as_1d(a, name=names[0]), as_1d(b, name=names[1])
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{names[0]} and {names[1]} have different lengths ({x.shape[0]} != {y.shape[0]})")
    w = None if sample_weight is None else as_1d(sample_weight, name="sample_weight").astype(float)
    if w is not None and w.shape[0] != x.shape[0]:
        raise ValueError("sample_weight must have the same length as the inputs")
    if numeric:
        try:
            x = x.astype(float)
            y = y.astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{names[0]}/{names[1]} must be numeric") from None
    miss = is_missing(x) | is_missing(y)
    if w is not None:
        miss |= np.isnan(w)
    if miss.any():
        if nan_policy == "raise":
            raise ValueError(f"{int(miss.sum())} missing value(s) in {names[0]}/{names[1]} (nan_policy='raise')")
        keep = ~miss
        x, y = x[keep], y[keep]
        w = None if w is None else w[keep]
    return x, y, w


def encode_labels(*arrays: np.ndarray, labels: Sequence[Any] | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer codes for label arrays over one shared, ordered label set.

    With ``labels`` the order is the caller's (that order is what weighted kappa and the
    ordinal metrics use); values not in ``labels`` raise. Without it, the sorted union.
    """
    if labels is None:
        present = [a for a in arrays if a.size]
        if not present:
            return [np.zeros(0, dtype=np.int64) for _ in arrays], np.array([])
        joined = np.concatenate(present)
        try:
            classes, inv = np.unique(joined, return_inverse=True)
        except TypeError:  # mixed types: order by their string form
            classes = np.array(sorted(set(joined.tolist()), key=str), dtype=object)
            return _encode_by_dict(arrays, classes), classes
        out, start = [], 0
        for a in arrays:
            out.append(inv[start : start + a.size].astype(np.int64) if a.size else np.zeros(0, dtype=np.int64))
            start += a.size
        return out, classes
    classes = np.asarray(list(labels))
    if len(set(classes.tolist())) != len(classes):
        raise ValueError("labels must be unique")
    try:
        order = np.argsort(classes, kind="stable")
        sorted_classes = classes[order]
        out = []
        for a in arrays:
            pos = np.clip(np.searchsorted(sorted_classes, a), 0, max(len(classes) - 1, 0))
            if len(classes) == 0 and a.size:
                raise ValueError(f"label {a[0]!r} is not in labels=[]")
            hit = sorted_classes[pos] == a if a.size else np.ones(0, dtype=bool)
            if not np.all(hit):
                bad = a[~np.asarray(hit, dtype=bool)][0]
                bad = bad.item() if hasattr(bad, "item") else bad
                raise ValueError(f"label {bad!r} is not in labels={classes.tolist()}")
            out.append(order[pos].astype(np.int64))
        return out, classes
    except TypeError:
        return _encode_by_dict(arrays, classes), classes


def _encode_by_dict(arrays: tuple[np.ndarray, ...], classes: np.ndarray) -> list[np.ndarray]:
    lookup = {v: i for i, v in enumerate(classes.tolist())}
    out = []
    for a in arrays:
        try:
            out.append(np.fromiter((lookup[v] for v in a.tolist()), dtype=np.int64, count=a.shape[0]))
        except KeyError as e:
            raise ValueError(f"label {e.args[0]!r} is not in labels={classes.tolist()}") from None
    return out


def ratings_matrix(ratings: Any, *, name: str = "ratings") -> np.ndarray:
    """A (n_units, n_raters) array from a 2-D array, nested lists or a DataFrame; missing -> NaN/None."""
    mod = type(ratings).__module__
    if mod.startswith("polars") or mod.startswith("pandas"):
        ratings = ratings.to_numpy()
    r = np.asarray(ratings)
    if r.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (units x raters) array, got shape {r.shape}")
    if r.dtype.kind not in "fiub":
        try:
            r = r.astype(float)
        except (TypeError, ValueError):
            r = r.astype(object)
    elif r.dtype.kind != "f":
        r = r.astype(float)
    return r


def rating_counts(ratings: Any, *, categories: Sequence[Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Turn a (units x raters) ratings matrix into a (units x categories) count table.

    Returns ``(counts, categories)``; missing ratings are not counted.

    >>> counts, cats = rating_counts([[1, 1, 2], [2, 2, None]])
    >>> counts.tolist(), cats.tolist()
    ([[2, 1], [0, 2]], [1.0, 2.0])
    """
    r = ratings_matrix(ratings)
    flat = r.reshape(-1)
    miss = is_missing(flat)
    (codes,), cats = encode_labels(flat[~miss], labels=categories)
    unit = np.repeat(np.arange(r.shape[0]), r.shape[1])[~miss]
    k = len(cats)
    counts = np.bincount(unit * k + codes, minlength=r.shape[0] * k).reshape(r.shape[0], k)
    return counts, cats


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise ``num / den`` with ``nan`` where ``den == 0`` (no warnings)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out
