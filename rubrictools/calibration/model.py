"""Calibrators: fit, predict, save and load (see :mod:`rubrictools.calibration`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from rubrictools.frames import to_polars

__all__ = [
    "AVERAGE",
    "Calibrator",
    "Model",
    "all_numeric",
    "dist_frame",
    "distributions_from_verdicts",
    "fit",
    "load",
    "predict",
    "targets",
]


Model = Literal["multinomial", "platt", "isotonic"]


AVERAGE = "__average__"


def distributions_from_verdicts(verdicts: Any, *, judge: str | None = None) -> pl.DataFrame:
    """The tidy ``id, criterion, label, prob`` table from a verdict table graded with
    ``grade(..., distribution=True)`` (rows without a distribution are left out).

    >>> import polars as pl
    >>> v = pl.DataFrame({"id": [1], "criterion": ["a"], "judge": ["m"],
    ...                   "distribution": [[{"label": "MET", "prob": 0.7}, {"label": "UNMET", "prob": 0.3}]]})
    >>> distributions_from_verdicts(v)["prob"].to_list()
    [0.7, 0.3]
    """
    v = to_polars(verdicts, name="verdicts")
    if "distribution" not in v.columns:
        raise ValueError("no 'distribution' column: grade with distribution=True")
    if judge is not None:
        v = v.filter(pl.col("judge") == judge)
    elif "judge" in v.columns and v.filter(pl.col("judge") != "ensemble")["judge"].n_unique() > 1:
        raise ValueError("several judges in the table: pass judge=")
    return (
        v.filter(pl.col("distribution").is_not_null())
        .select("id", "criterion", pl.col("distribution"))
        .explode("distribution")
        .unnest("distribution")
        .select(
            "id", pl.col("criterion").cast(pl.String), pl.col("label").cast(pl.String), pl.col("prob").cast(pl.Float64)
        )
    )


def _label_sort_key(x: str) -> tuple[int, float | str]:
    try:
        return (0, float(x))
    except ValueError:
        return (1, x)


def all_numeric(labels: Sequence[str]) -> bool:
    """Whether every label reads as a number (so expected values and RMSE are defined)."""
    return all(_label_sort_key(lab)[0] == 0 for lab in labels)


def _numeric_label(label: pl.Expr) -> pl.Expr:
    """Numeric labels in one spelling ("1", " 1 " and "1.0" -> "1.0") on both the judge's and the
    humans' side; other labels unchanged."""
    return (
        pl.when(label.str.contains(r"^\s*-?\d+(\.\d+)?\s*$"))
        .then(label.str.strip_chars().cast(pl.Float64, strict=False).cast(pl.String))
        .otherwise(label)
        .alias("label")
    )


def dist_frame(distributions: Any) -> pl.DataFrame:
    d = to_polars(distributions, name="distributions")
    missing = {"id", "criterion", "label", "prob"} - set(d.columns)
    if missing:
        raise ValueError(f"distributions need columns id, criterion, label, prob; missing {sorted(missing)}")
    d = d.with_columns(
        pl.col("label").cast(pl.String), pl.col("criterion").cast(pl.String), pl.col("prob").cast(pl.Float64)
    )
    if d["prob"].is_nan().any() or (d["prob"] < 0).any():
        raise ValueError("distributions: prob must be non-negative numbers")
    d = d.with_columns(_numeric_label(pl.col("label")))
    return d.with_columns((pl.col("prob") / pl.col("prob").sum().over("id", "criterion")).fill_nan(None).alias("prob"))


@dataclass
class Calibrator:
    """A fitted calibration model (JSON-serialisable: :meth:`to_dict`, :meth:`save`, :func:`load`)."""

    model: str
    target: str
    labels: list[str]
    features: list[str]
    raters: list[str]
    params: dict[str, Any] = field(repr=False)
    settings: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ features
    def design(self, distributions: Any) -> tuple[list[Any], np.ndarray]:
        """Ids and the feature matrix of the judge's distributions (missing -> uniform)."""
        d = dist_frame(distributions).with_columns(pl.format("{}={}", "criterion", "label").alias("feature"))
        ids = d["id"].unique(maintain_order=True)
        wide = d.pivot(on="feature", index="id", values="prob", aggregate_function="first")
        wide = pl.DataFrame({"id": ids}).join(wide, on="id", how="left", maintain_order="left")
        absent = [f for f in self.features if f not in wide.columns]
        wide = wide.with_columns([pl.lit(None, dtype=pl.Float64).alias(f) for f in absent])
        x = wide.select([pl.col(f).cast(pl.Float64) for f in self.features]).to_numpy()
        # a criterion the judge did not answer: uniform over its labels
        crit = [f.split("=", 1)[0] for f in self.features]
        sizes = {c: crit.count(c) for c in set(crit)}
        fill = np.array([1.0 / sizes[c] for c in crit])
        x = np.where(np.isnan(x), fill[None, :], x)
        return ids.to_list(), x

    # ------------------------------------------------------------ prediction
    def predict(self, distributions: Any, raters: Any = None) -> pl.DataFrame:
        """Calibrated predictions: ``id, rater, p_<label>..., expected, label``.

        ``raters``: ``None`` predicts for the average rater; a list of rater names or a frame
        with ``id, rater`` predicts for those raters (unknown raters get the average).
        ``expected`` is the probability-weighted mean of numeric labels (null otherwise).
        """
        ids, x = self.design(distributions)
        pos = {k: i for i, k in enumerate(ids)}
        if raters is None:
            pairs = pl.DataFrame({"id": ids, "rater": [AVERAGE] * len(ids)})
        elif isinstance(raters, (list, tuple)):
            pairs = pl.DataFrame(
                {"id": [i for i in ids for _ in raters], "rater": [str(r) for _ in ids for r in raters]}
            )
        else:
            pairs = (
                to_polars(raters, name="raters")
                .select("id", pl.col("rater").cast(pl.String))
                .unique(maintain_order=True)
            )
            pairs = pairs.filter(pl.col("id").is_in(ids))
        xi = np.array([pos[i] for i in pairs["id"].to_list()], dtype=np.int64)
        rix = {r: i for i, r in enumerate(self.raters)}
        r = np.array([rix.get(a, -1) for a in pairs["rater"].to_list()], dtype=np.int64)
        probs = self._probs(x[xi] if xi.size else np.zeros((0, x.shape[1])), r)
        out = pairs.with_columns([pl.Series(f"p_{lab}", probs[:, k]) for k, lab in enumerate(self.labels)])
        if all_numeric(self.labels):
            vals = np.array([float(v) for v in self.labels])
            out = out.with_columns(pl.Series("expected", probs @ vals))
        else:
            out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias("expected"))
        best = np.array(self.labels, dtype=object)[probs.argmax(1)] if len(probs) else np.array([], dtype=object)
        return out.with_columns(pl.Series("label", best.tolist(), dtype=pl.String))

    def _probs(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        p = self.params
        if self.model == "multinomial":
            w, b = np.asarray(p["W"]), np.asarray(p["b"])
            z = x @ w.T + b
            wr, br = np.asarray(p["Wr"]), np.asarray(p["br"])
            known = r >= 0
            if known.any():
                z[known] += np.einsum("nd,nkd->nk", x[known], wr[r[known]]) + br[r[known]]
            return _softmax(z)
        pos = self.labels.index(p["positive"])
        q = x[:, self.features.index(f"{self.target}={p['positive']}")]
        if self.model == "platt":
            a, c = p["a"], p["c"]
            pp = 1.0 / (1.0 + np.exp(-(a * _logit(q) + c)))
        else:
            pp = np.interp(q, np.asarray(p["x"]), np.asarray(p["y"]))
        out = np.zeros((q.size, 2))
        out[:, pos] = pp
        out[:, 1 - pos] = 1 - pp
        return out

    # ------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        params = {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v) for k, v in self.params.items()}
        return {
            "model": self.model,
            "target": self.target,
            "labels": self.labels,
            "features": self.features,
            "raters": self.raters,
            "params": params,
            "settings": self.settings,
        }

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.to_dict()))
        return p


def load(path_or_dict: str | Path | dict[str, Any]) -> Calibrator:
    """Load a calibrator written by :meth:`Calibrator.save` (or its :meth:`~Calibrator.to_dict`)."""
    d = path_or_dict if isinstance(path_or_dict, dict) else json.loads(Path(path_or_dict).read_text())
    params = {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in d["params"].items()}
    return Calibrator(
        d["model"],
        d["target"],
        list(d["labels"]),
        list(d["features"]),
        list(d["raters"]),
        params,
        dict(d.get("settings", {})),
    )


def predict(calibrator: Calibrator, distributions: Any, raters: Any = None) -> pl.DataFrame:
    """Same as :meth:`Calibrator.predict`."""
    return calibrator.predict(distributions, raters)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def _pav(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Isotonic (non-decreasing) least-squares fit of y on x by pool-adjacent-violators."""
    order = np.argsort(x, kind="mergesort")
    xs, ys = x[order], y[order].astype(float)
    # merge equal x first
    ux, inv = np.unique(xs, return_inverse=True)
    sums = np.bincount(inv, weights=ys)
    cnts = np.bincount(inv).astype(float)
    vals, wts, starts = [], [], []
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


def targets(human: Any, target: str, ids: list[Any]) -> pl.DataFrame:
    h = to_polars(human, name="human")
    if "rater" not in h.columns:
        h = h.with_columns(pl.lit("human").alias("rater"))
    h = h.filter(pl.col("criterion").cast(pl.String) == target).drop_nulls("label")
    h = h.with_columns(pl.col("label").cast(pl.String), pl.col("rater").cast(pl.String))
    h = h.with_columns(_numeric_label(pl.col("label")))
    # a rater who labelled one submission twice has two targets: number them to pair predictions 1:1
    return h.filter(pl.col("id").is_in(ids)).with_columns(pl.int_range(pl.len()).over("id", "rater").alias("_occ"))


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
    ``platt``/``isotonic`` use the target's own distribution). See the module docstring for
    the models and penalties.
    """
    d = dist_frame(distributions)
    h = to_polars(human, name="human")
    if rater_column != "rater":
        h = h.rename({rater_column: "rater"})
    crits = features or sorted(d["criterion"].unique().to_list())
    if model in ("platt", "isotonic"):
        crits = [target]
    d = d.filter(pl.col("criterion").is_in(crits))
    feat_labels = d.select("criterion", "label").unique().sort("criterion", "label")
    feats = [
        f"{c}={lab}"
        for c, lab in sorted(feat_labels.iter_rows(), key=lambda t: (crits.index(t[0]), _label_sort_key(t[1])))
    ]
    if init is not None:
        feats = init.features
    cal = Calibrator(model, target, [], feats, [], {}, {"l2": l2, "l2_rater": l2_rater, "anchor": anchor})
    ids, x = cal.design(d)
    t = targets(h, target, ids)
    if t.height == 0:
        raise ValueError(f"no human labels on {target!r} for the submissions in distributions")
    labels = sorted(set(t["label"].to_list()) | set(init.labels if init else []), key=_label_sort_key)
    raters = sorted(set(t["rater"].to_list()) | set(init.raters if init else []))
    cal.labels, cal.raters = labels, raters
    pos = {k: i for i, k in enumerate(ids)}
    xi = np.array([pos[i] for i in t["id"].to_list()])
    y = np.array([labels.index(v) for v in t["label"].to_list()])
    r = np.array([raters.index(v) for v in t["rater"].to_list()])
    X = x[xi]
    if model == "multinomial":
        cal.params = _fit_multinomial(
            X, r, y, len(raters), len(labels), l2, l2_rater, init, anchor, max_iter, raters, labels
        )
    elif model in ("platt", "isotonic"):
        if len(labels) != 2:
            raise ValueError(f"{model} calibration needs a binary target; {target!r} has labels {labels}")
        positive = "MET" if "MET" in labels else labels[-1]
        col = feats.index(f"{target}={positive}") if f"{target}={positive}" in feats else None
        if col is None:
            raise ValueError(f"the judge gave no probability for {target}={positive}")
        q = X[:, col]
        yy = (np.array(labels)[y] == positive).astype(float)
        if model == "platt":
            from scipy.optimize import minimize

            z = _logit(q)

            def f(ac: np.ndarray) -> tuple[float, np.ndarray]:
                s = 1 / (1 + np.exp(-(ac[0] * z + ac[1])))
                s = np.clip(s, 1e-12, 1 - 1e-12)
                loss = -np.mean(yy * np.log(s) + (1 - yy) * np.log(1 - s)) + l2 * (ac[0] ** 2 + ac[1] ** 2)
                g = s - yy
                return loss, np.array([np.mean(g * z) + 2 * l2 * ac[0], np.mean(g) + 2 * l2 * ac[1]])

            res = minimize(f, np.array([1.0, 0.0]), jac=True, method="L-BFGS-B")
            cal.params = {"a": float(res.x[0]), "c": float(res.x[1]), "positive": positive}
        else:
            ux, fitted = _pav(q, yy)
            cal.params = {"x": ux, "y": fitted, "positive": positive}
    else:
        raise ValueError("model must be 'multinomial', 'platt' or 'isotonic'")
    return cal


def _fit_multinomial(
    X: np.ndarray,
    r: np.ndarray,
    y: np.ndarray,
    n_r: int,
    k: int,
    l2: float,
    l2_rater: float,
    init: Calibrator | None,
    anchor: float,
    max_iter: int,
    raters: list[str],
    labels: list[str],
) -> dict[str, Any]:
    from scipy.optimize import minimize

    n, d = X.shape
    sizes = (k * d, k, n_r * k * d, n_r * k)

    def unpack(t: np.ndarray) -> tuple[np.ndarray, ...]:
        o = np.cumsum((0, *sizes))
        return (
            t[o[0] : o[1]].reshape(k, d),
            t[o[1] : o[2]],
            t[o[2] : o[3]].reshape(n_r, k, d),
            t[o[3] : o[4]].reshape(n_r, k),
        )

    w0 = b0 = None
    theta0 = np.zeros(sum(sizes))
    if init is not None:
        if init.model != "multinomial":  # fit() reuses init.features, so the inputs line up
            raise ValueError("init must be a multinomial calibrator over the same features")
        lab_map = [init.labels.index(lab) for lab in labels]
        w0 = np.asarray(init.params["W"])[lab_map]
        b0 = np.asarray(init.params["b"])[lab_map]
        wr0 = np.zeros((n_r, k, d))
        br0 = np.zeros((n_r, k))
        for i, rname in enumerate(raters):
            if rname in init.raters:
                j = init.raters.index(rname)
                wr0[i] = np.asarray(init.params["Wr"])[j][lab_map]
                br0[i] = np.asarray(init.params["br"])[j][lab_map]
        theta0 = np.concatenate([w0.ravel(), b0, wr0.ravel(), br0.ravel()])
    rows = np.arange(n)
    onehot = np.zeros((n_r, n))  # per-rater sums as one matrix product
    onehot[r, rows] = 1.0

    def f(t: np.ndarray) -> tuple[float, np.ndarray]:
        w, b, wr, br = unpack(t)
        z = X @ w.T + b + np.einsum("nd,nkd->nk", X, wr[r]) + br[r]
        z = z - z.max(1, keepdims=True)
        lse = np.log(np.exp(z).sum(1))
        p = np.exp(z - lse[:, None])
        loss = -(z[rows, y] - lse).mean() + l2_rater * ((wr**2).sum() + (br**2).sum())
        g = p.copy()
        g[rows, y] -= 1
        g /= n
        gw = g.T @ X
        gb = g.sum(0)
        gwr = (onehot @ (g[:, :, None] * X[:, None, :]).reshape(n, k * d)).reshape(n_r, k, d)
        gbr = onehot @ g
        gwr += 2 * l2_rater * wr
        gbr += 2 * l2_rater * br
        if w0 is not None:
            loss += anchor * ((w - w0) ** 2).sum()
            gw += 2 * anchor * (w - w0)
        else:
            loss += l2 * (w**2).sum()
            gw += 2 * l2 * w
        return float(loss), np.concatenate([gw.ravel(), gb, gwr.ravel(), gbr.ravel()])

    from threadpoolctl import threadpool_limits

    # the matrices are small: one BLAS thread is as fast idle, and several threads on a busy
    # machine made nested cross-validation 3-5x slower (oversubscribed cores)
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(f, theta0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    w, b, wr, br = unpack(res.x)
    return {"W": w, "b": b, "Wr": wr, "br": br, "converged": bool(res.success), "loss": float(res.fun)}
