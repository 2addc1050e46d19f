"""Fitting calibrators: labelled examples as arrays, then one fit per set of rows.

:func:`fit` is the public entry. Cross-validation and tuning build :class:`Examples` once
and fit row subsets of it (:func:`fit_examples`), so a fold costs a fit and nothing else:
no table is filtered, pivoted or joined per fold.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from rubrictools.calibration.model import Calibrator, Model, codes, dist_frame, label_sort_key, logit, targets
from rubrictools.frames import to_polars

__all__ = ["Examples", "check_binary", "examples", "fit", "fit_examples"]


@dataclass(frozen=True)
class Examples:
    """One row per human label on the target: the judge's distributions of the labelled
    submission (``x``, columns :attr:`features`), the label and the rater, and ``table``
    (``id, rater, _occ, label``) naming each row."""

    features: list[str]
    x: np.ndarray
    label: np.ndarray
    rater: np.ndarray
    table: pl.DataFrame

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


def _feature_names(d: pl.DataFrame, target: str, features: list[str] | None, model: str) -> list[str]:
    crits = [target] if model in ("platt", "isotonic") else features or sorted(d["criterion"].unique().to_list())
    pairs = d.filter(pl.col("criterion").is_in(crits)).select("criterion", "label").unique()
    ordered = sorted(pairs.iter_rows(), key=lambda t: (crits.index(t[0]), label_sort_key(t[1])))
    return [f"{c}={lab}" for c, lab in ordered]


def examples(
    distributions: Any,
    human: Any,
    *,
    target: str,
    features: list[str] | None = None,
    model: Model = "multinomial",
    init: Calibrator | None = None,
) -> Examples:
    """The labelled examples of ``target``: inputs are the judge's distributions on
    ``features`` criteria (default all; ``init``'s features when fine-tuning)."""
    d = dist_frame(distributions)
    feats = init.features if init is not None else _feature_names(d, target, features, model)
    d = d.filter(pl.col("criterion").is_in(sorted({f.split("=", 1)[0] for f in feats})))
    ids, x = Calibrator(model, target, [], feats, [], {}).design(d)
    t = targets(human, target, ids)
    at = pl.DataFrame({"id": ids, "_row": np.arange(len(ids))})
    rows = t.join(at, on="id", how="left", maintain_order="left")["_row"].to_numpy()
    return Examples(
        feats,
        x[rows],
        t["label"].to_numpy().astype(object),
        t["rater"].to_numpy().astype(object),
        t.select("id", "rater", "_occ", "label"),
    )


def fit(
    distributions: Any,
    human: Any,
    *,
    target: str,
    features: list[str] | None = None,
    model: Model = "multinomial",
    rater_column: str = "rater",
    l2: float = 1e-3,
    l2_rater: float = 1e-2,
    init: Calibrator | None = None,
    anchor: float = 1e-2,
    max_iter: int = 500,
) -> Calibrator:
    """Fit a calibrator predicting human labels on ``target`` from the judge's distributions.

    ``features``: criteria whose distributions are inputs (default: all criteria present;
    ``platt``/``isotonic`` use the target's own distribution). See
    :mod:`rubrictools.calibration` for the models and penalties.
    """
    h = to_polars(human, name="human")
    if rater_column != "rater":
        h = h.rename({rater_column: "rater"})
    if model not in ("multinomial", "platt", "isotonic"):
        raise ValueError("model must be 'multinomial', 'platt' or 'isotonic'")
    ex = examples(distributions, h, target=target, features=features, model=model, init=init)
    if ex.n == 0:
        raise ValueError(f"no human labels on {target!r} for the submissions in distributions")
    return fit_examples(
        ex, target=target, model=model, l2=l2, l2_rater=l2_rater, init=init, anchor=anchor, max_iter=max_iter
    )


def fit_examples(
    ex: Examples,
    rows: np.ndarray | None = None,
    *,
    target: str,
    model: Model = "multinomial",
    l2: float = 1e-3,
    l2_rater: float = 1e-2,
    init: Calibrator | None = None,
    anchor: float = 1e-2,
    max_iter: int = 500,
) -> Calibrator:
    """Fit on the examples ``rows`` (indices; default all) as :func:`fit` does."""
    sel = np.arange(ex.n) if rows is None else np.asarray(rows)
    lab, rat = ex.label[sel], ex.rater[sel]
    labels = sorted(set(lab.tolist()) | set(init.labels if init else []), key=label_sort_key)
    raters = sorted(set(rat.tolist()) | set(init.raters if init else []))
    settings = {"l2": l2, "l2_rater": l2_rater, "anchor": anchor}
    cal = Calibrator(model, target, labels, ex.features, raters, {}, settings)
    X, y, r = ex.x[sel], codes(lab, labels), codes(rat, raters)
    if model == "multinomial":
        cal.params = _multinomial(X, r, y, len(raters), len(labels), l2, l2_rater, anchor, max_iter, init, cal)
        return cal
    check_binary(model, labels, target)
    positive = "MET" if "MET" in labels else labels[-1]
    if f"{target}={positive}" not in ex.features:
        raise ValueError(f"the judge gave no probability for {target}={positive}")
    q = X[:, ex.features.index(f"{target}={positive}")]
    yy = (np.array(labels)[y] == positive).astype(float)
    if model == "platt":
        a, c = _platt(logit(q), yy, l2)
        cal.params = {"a": a, "c": c, "positive": positive}
    else:
        ux, fitted = _pav(q, yy)
        cal.params = {"x": ux, "y": fitted, "positive": positive}
    return cal


def check_binary(model: str, labels: list[str], target: str) -> None:
    """``platt`` and ``isotonic`` need exactly two labels (checked before any fit is sent out)."""
    if model in ("platt", "isotonic") and len(labels) != 2:
        raise ValueError(f"{model} calibration needs a binary target; {target!r} has labels {labels}")


def _platt(z: np.ndarray, yy: np.ndarray, l2: float) -> tuple[float, float]:
    """Logistic regression of ``yy`` on ``z`` with an L2 penalty on both coefficients."""
    from scipy.optimize import minimize

    def f(ac: np.ndarray) -> tuple[float, np.ndarray]:
        s = np.clip(1 / (1 + np.exp(-(ac[0] * z + ac[1]))), 1e-12, 1 - 1e-12)
        loss = -np.mean(yy * np.log(s) + (1 - yy) * np.log(1 - s)) + l2 * (ac[0] ** 2 + ac[1] ** 2)
        g = s - yy
        return loss, np.array([np.mean(g * z) + 2 * l2 * ac[0], np.mean(g) + 2 * l2 * ac[1]])

    res = minimize(f, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
    return float(res.x[0]), float(res.x[1])


def _pav(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Isotonic (non-decreasing) least-squares fit of y on x by pool-adjacent-violators."""
    order = np.argsort(x, kind="mergesort")
    xs, ys = x[order], y[order].astype(float)
    ux, inv = np.unique(xs, return_inverse=True)  # equal x pooled first
    sums = np.bincount(inv, weights=ys)
    cnts = np.bincount(inv).astype(float)
    vals: list[float] = []
    wts: list[float] = []
    starts: list[int] = []
    for i in range(ux.size):
        vals.append(sums[i] / cnts[i])
        wts.append(cnts[i])
        starts.append(i)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            w = wts[-2] + wts[-1]
            v = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w
            vals[-2:], wts[-2:] = [v], [w]
            starts.pop()
    fitted = np.empty(ux.size)
    bounds = [*starts, ux.size]
    for j in range(len(vals)):
        fitted[bounds[j] : bounds[j + 1]] = vals[j]
    return ux, fitted


def _aligned(src: Calibrator, cal: Calibrator) -> list[np.ndarray]:
    """``src``'s multinomial parameters on ``cal``'s labels and raters (zeros where ``src``
    has none): ``[W, b, Wr, br]``."""
    k, d, n_r = len(cal.labels), len(cal.features), len(cal.raters)
    lab = codes(np.array(cal.labels, dtype=object), src.labels)
    rat = codes(np.array(cal.raters, dtype=object), src.raters)
    out = [np.zeros((k, d)), np.zeros(k), np.zeros((n_r, k, d)), np.zeros((n_r, k))]
    p = {name: np.asarray(src.params[name]) for name in ("W", "b", "Wr", "br")}
    has = lab >= 0
    out[0][has], out[1][has] = p["W"][lab[has]], p["b"][lab[has]]
    for i in np.flatnonzero(rat >= 0):
        out[2][i][has] = p["Wr"][rat[i]][lab[has]]
        out[3][i][has] = p["br"][rat[i]][lab[has]]
    return out


@functools.cache
def _blas() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries (found once: finding them reads
    every loaded library's file)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _stack(params: list[np.ndarray]) -> np.ndarray:
    """``[W, b, Wr, br]`` as the parameter matrix ``[W^T; b; Wr_1^T; ...; Wr_R^T; br]``."""
    w, b, wr, br = params
    return np.vstack([w.T, b[None, :], wr.transpose(0, 2, 1).reshape(-1, w.shape[0]), br])


def _unstack(theta: np.ndarray, d: int, n_r: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The inverse of :func:`_stack`."""
    k = theta.shape[1]
    wr = theta[d + 1 : d + 1 + n_r * d].reshape(n_r, d, k).transpose(0, 2, 1)
    return theta[:d].T.copy(), theta[d].copy(), wr.copy(), theta[d + 1 + n_r * d :].copy()


def _multinomial(
    X: np.ndarray,
    r: np.ndarray,
    y: np.ndarray,
    n_r: int,
    k: int,
    l2: float,
    l2_rater: float,
    anchor: float,
    max_iter: int,
    init: Calibrator | None,
    cal: Calibrator,
) -> dict[str, Any]:
    """L-BFGS on the mean cross-entropy of ``softmax(x (W + W_r)^T + b + b_r)`` plus
    ``l2_rater (|W_r|^2 + |b_r|^2)`` and ``l2 |W|^2`` (or ``anchor |W - W_init|^2``)."""
    from scipy.optimize import minimize

    if init is not None and init.model != "multinomial":  # init's features are used, so inputs line up
        raise ValueError("init must be a multinomial calibrator over the same features")
    n, d = X.shape
    # one design matrix [x, 1, x in its rater's block, its rater's indicator] and one
    # parameter matrix [W^T; b; W_r^T for each rater; b_r], so logits are one product
    design = np.zeros((n, d + 1 + n_r * d + n_r))
    design[:, :d], design[:, d] = X, 1.0
    rows = np.arange(n)
    block = d + 1 + r[:, None] * d + np.arange(d)[None, :]
    design[rows[:, None], block] = X
    design[rows, d + 1 + n_r * d + r] = 1.0
    weight = anchor if init is not None else l2
    penalty = np.concatenate([np.full(d, weight), [0.0], np.full(n_r * d + n_r, l2_rater)])[:, None]
    centre = np.zeros((design.shape[1], k))
    if init is not None:
        centre[:d] = _aligned(init, cal)[0].T
    theta0 = _stack(_aligned(init, cal)) if init is not None else np.zeros((design.shape[1], k))

    def f(t: np.ndarray) -> tuple[float, np.ndarray]:
        theta = t.reshape(-1, k)
        z = design @ theta
        z -= z.max(1, keepdims=True)
        lse = np.log(np.exp(z).sum(1))
        g = np.exp(z - lse[:, None])
        off = theta - centre
        loss = -(z[rows, y] - lse).mean() + float((penalty * off**2).sum())
        g[rows, y] -= 1
        grad = design.T @ (g / n) + 2 * penalty * off
        return float(loss), grad.ravel()

    # the matrices are small: one BLAS thread is as fast idle, and several threads on a busy
    # machine made nested cross-validation 3-5x slower (oversubscribed cores)
    with _blas().limit(limits=1, user_api="blas"):
        res = minimize(f, theta0.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    w, b, wr, br = _unstack(res.x.reshape(-1, k), d, n_r)
    return {"W": w, "b": b, "Wr": wr, "br": br, "converged": bool(res.success), "loss": float(res.fun)}
