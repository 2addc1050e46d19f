"""Bootstrap kernels: each metric as a function of resampling weights over submissions."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from rubrictools import metrics as m
from rubrictools.human_agreement.catalog import BINARY_ONLY, CONFUSION_METRICS, ORDERED_ONLY
from rubrictools.metrics import resampling as bs
from rubrictools.metrics.classification import (
    accuracy_from_confusion,
    mcc_from_confusion,
    precision_recall_f1_from_confusion,
)
from rubrictools.metrics.correlation import distinct_pairs, kendall_weighted, pearson_weighted, spearman_weighted
from rubrictools.metrics.distribution import cdf_distances_weighted, js_from_counts
from rubrictools.metrics.errors import error_stats, errors_from_stats, rmse_affine_weighted
from rubrictools.metrics.kappa import (
    ac1_from_confusion,
    kappa_from_confusion,
    kappa_test_from_confusion,
)

__all__ = ["criterion_kernels", "pvalues", "score_kernels"]


def _confusion_kernel(h: np.ndarray, j: np.ndarray, k: int, pos: int | None, names: list[str]) -> bs.Kernel:
    stats = np.zeros((h.shape[0], k * k))
    stats[np.arange(h.shape[0]), h * k + j] = 1.0

    def finish(tot: np.ndarray) -> dict[str, np.ndarray]:
        cm = tot.reshape(tot.shape[0], k, k)
        out: dict[str, np.ndarray] = {}
        for name in names:
            if name == "accuracy":
                out[name] = accuracy_from_confusion(cm)
            elif name in ("precision", "recall", "f1"):
                p, r, f = precision_recall_f1_from_confusion(cm, average="binary", pos_index=pos)
                out[name] = {"precision": p, "recall": r, "f1": f}[name]
            elif name == "f1_macro":
                # a class in neither the human nor the judge labels of the (re)sample is no class
                # at all (as sklearn's f1_score): NaN, left out of the mean, never an F1 of 0
                out[name] = precision_recall_f1_from_confusion(cm, average="macro", zero_division=np.nan)[2]
            elif name == "mcc":
                out[name] = mcc_from_confusion(cm)
            elif name == "cohen_kappa":
                out[name] = kappa_from_confusion(cm)
            elif name == "kappa_linear":
                out[name] = kappa_from_confusion(cm, "linear")
            elif name == "kappa_quadratic":
                out[name] = kappa_from_confusion(cm, "quadratic")
            elif name == "gwet_ac1":
                out[name] = ac1_from_confusion(cm)
            elif name == "js_divergence":
                out[name] = js_from_counts(cm.sum(-1), cm.sum(-2))
            elif name == "judge_rate":
                out[name] = cm[:, :, pos].sum(-1) / np.where(cm.sum((-2, -1)) > 0, cm.sum((-2, -1)), np.nan)
            elif name == "human_rate":
                out[name] = cm[:, pos, :].sum(-1) / np.where(cm.sum((-2, -1)) > 0, cm.sum((-2, -1)), np.nan)
        return out

    return bs.Kernel(tuple(names), finish, stats=stats)


def _kendall_kernel(x: np.ndarray, y: np.ndarray, name: str = "kendall") -> bs.Kernel:
    from scipy.stats import kendalltau

    def point() -> dict[str, float]:
        if x.shape[0] < 2:
            return {name: float("nan")}
        return {name: float(kendalltau(x, y).statistic)}

    def finish(w: np.ndarray) -> dict[str, np.ndarray]:
        return {name: kendall_weighted(x, y, w)}

    finish.distinct_pairs = int(distinct_pairs(x, y)[0].size) if x.size else 0  # type: ignore[attr-defined]  # a function attribute read by the caller
    return bs.Kernel((name,), finish, n_rows=x.shape[0], point_fn=point)


def criterion_kernels(g: pl.DataFrame, kind: str, k: int, pos: int | None, names: list[str]) -> list[bs.Kernel]:
    h = g["h_code"].to_numpy().astype(np.int64)
    j = g["j_code"].to_numpy().astype(np.int64)
    hv = g["h_value"].to_numpy().astype(float)
    jv = g["j_value"].to_numpy().astype(float)
    ordered = kind in ("ordinal", "binary") and not np.isnan(hv).any() and not np.isnan(jv).any()
    kernels: list[bs.Kernel] = []
    conf = [n for n in names if n in CONFUSION_METRICS]
    if kind != "binary" or pos is None:
        conf = [n for n in conf if n not in BINARY_ONLY]
    if kind == "nominal":
        conf = [n for n in conf if n not in ORDERED_ONLY]
    if conf:
        kernels.append(_confusion_kernel(h, j, k, pos, conf))
    if ordered and "mae" in names:
        st = error_stats(hv, jv)
        kernels.append(bs.Kernel(("mae",), lambda t: {"mae": errors_from_stats(t)["mae"]}, stats=st))
    if ordered and "spearman" in names:
        kernels.append(bs.Kernel(("spearman",), lambda w: {"spearman": spearman_weighted(hv, jv, w)}, n_rows=h.size))
    if ordered and "kendall" in names:
        kernels.append(_kendall_kernel(hv, jv))
    return kernels


def score_kernels(hs: np.ndarray, js: np.ndarray, names: list[str]) -> list[bs.Kernel]:
    kernels: list[bs.Kernel] = []
    err = [n for n in names if n in ("rmse", "mae", "bias", "effect_size")]
    if err:
        st = error_stats(hs, js)
        kernels.append(bs.Kernel(tuple(err), lambda t: {n: errors_from_stats(t)[n] for n in err}, stats=st))
    if "pearson" in names:
        kernels.append(bs.Kernel(("pearson",), lambda w: {"pearson": pearson_weighted(hs, js, w)}, n_rows=hs.size))
    if "spearman" in names:
        kernels.append(bs.Kernel(("spearman",), lambda w: {"spearman": spearman_weighted(hs, js, w)}, n_rows=hs.size))
    if "kendall" in names:
        kernels.append(_kendall_kernel(hs, js))
    if "rmse_affine" in names:
        kernels.append(
            bs.Kernel(("rmse_affine",), lambda w: {"rmse_affine": rmse_affine_weighted(hs, js, w)}, n_rows=hs.size)
        )
    dist = [n for n in names if n in ("wasserstein", "ks")]
    if dist:

        def finish(w: np.ndarray) -> dict[str, np.ndarray]:
            w1, ks = cdf_distances_weighted(js, hs, w, w)
            return {"wasserstein": w1, "ks": ks}

        kernels.append(bs.Kernel(tuple(dist), finish, n_rows=hs.size))
    return kernels


def pvalues(names: list[str], h: np.ndarray, j: np.ndarray, *, labels: list[int] | None = None) -> dict[str, float]:

    out: dict[str, float] = {}
    if len(h) < 2:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            if name == "cohen_kappa" and labels is not None:
                k = len(labels)
                cm = (
                    np.bincount(h.astype(np.int64) * k + j.astype(np.int64), minlength=k * k)
                    .reshape(k, k)
                    .astype(float)
                )
                out[name] = kappa_test_from_confusion(cm).pvalue
            elif name == "pearson":
                out[name] = m.pearson(h, j).pvalue
            elif name == "spearman":
                out[name] = m.spearman(h, j).pvalue
            elif name == "kendall":
                out[name] = m.kendall(h, j).pvalue
            elif name == "bias":
                out[name] = m.mean_bias(h, j).pvalue
            elif name == "ks":
                out[name] = m.ks_2samp(j, h).pvalue
    return out
