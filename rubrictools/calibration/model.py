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
    "codes",
    "dist_frame",
    "distributions_from_verdicts",
    "label_sort_key",
    "load",
    "logit",
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


def label_sort_key(x: str) -> tuple[int, float | str]:
    try:
        return (0, float(x))
    except ValueError:
        return (1, x)


def all_numeric(labels: Sequence[str]) -> bool:
    """Whether every label reads as a number (so expected values and RMSE are defined)."""
    return all(label_sort_key(lab)[0] == 0 for lab in labels)


def _numeric_label(label: pl.Expr) -> pl.Expr:
    """Numeric labels in one spelling ("1", " 1 " and "1.0" -> "1"; "2.5" stays) on both the judge's
    and the humans' side, as a person writes them; other labels unchanged."""
    x = label.str.strip_chars().cast(pl.Float64, strict=False)
    spelt = pl.when(x == x.round()).then(x.cast(pl.Int64).cast(pl.String)).otherwise(x.cast(pl.String))
    return pl.when(label.str.contains(r"^\s*-?\d+(\.\d+)?\s*$")).then(spelt).otherwise(label).alias("label")


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
        probs = self.probabilities(x[xi] if xi.size else np.zeros((0, x.shape[1])), r)
        out = pairs.with_columns([pl.Series(f"p_{lab}", probs[:, k]) for k, lab in enumerate(self.labels)])
        if all_numeric(self.labels):
            vals = np.array([float(v) for v in self.labels])
            out = out.with_columns(pl.Series("expected", probs @ vals))
        else:
            out = out.with_columns(pl.lit(None, dtype=pl.Float64).alias("expected"))
        best = np.array(self.labels, dtype=object)[probs.argmax(1)] if len(probs) else np.array([], dtype=object)
        return out.with_columns(pl.Series("label", best.tolist(), dtype=pl.String))

    def probabilities(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """Label probabilities (rows x :attr:`labels`) for feature rows ``x`` (as from
        :meth:`design`) and rater indices ``r`` into :attr:`raters` (-1: the average rater)."""
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
            pp = 1.0 / (1.0 + np.exp(-(a * logit(q) + c)))
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


def logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def codes(values: np.ndarray, names: list[str]) -> np.ndarray:
    """Index of each value in ``names``, -1 when absent (one lookup per distinct value).

    >>> codes(np.array(["b", "a", "z", "b"], dtype=object), ["a", "b"]).tolist()
    [1, 0, -1, 1]
    """
    uniq, inverse = np.unique(np.asarray(values).astype(str), return_inverse=True)
    where = {v: i for i, v in enumerate(names)}
    return np.array([where.get(u, -1) for u in uniq], dtype=np.int64)[inverse].reshape(-1)


def targets(human: Any, target: str, ids: list[Any]) -> pl.DataFrame:
    h = to_polars(human, name="human")
    if "rater" not in h.columns:
        h = h.with_columns(pl.lit("human").alias("rater"))
    h = h.filter(pl.col("criterion").cast(pl.String) == target).drop_nulls("label")
    h = h.with_columns(pl.col("label").cast(pl.String), pl.col("rater").cast(pl.String))
    h = h.with_columns(_numeric_label(pl.col("label")))
    # a rater who labelled one submission twice has two targets: number them to pair predictions 1:1
    return h.filter(pl.col("id").is_in(ids)).with_columns(pl.int_range(pl.len()).over("id", "rater").alias("_occ"))
