"""Classification agreement between two label sequences (judge vs human, rater vs rater).

Every metric here is a function of the confusion matrix ``C`` (``C[i, j]`` = weight of
items with true label *i* and predicted label *j*), so each public function has a batched
twin ``*_from_confusion(C)`` taking a stack of matrices of shape ``(B, K, K)``; the bootstrap
uses those to evaluate 1,000 resamples with a few array operations.

Missing values (``None``/``NaN``/null) on either side drop the pair (``nan_policy="omit"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rubrictools.metrics._base import NanPolicy, encode_labels, paired, safe_div

__all__ = [
    "accuracy",
    "accuracy_from_confusion",
    "confusion_matrix",
    "f1",
    "mcc",
    "mcc_from_confusion",
    "precision",
    "precision_recall_f1_from_confusion",
    "recall",
]

Average = Literal["binary", "macro", "micro", "weighted"] | None


def confusion_counts(
    y_true: Any, y_pred: Any, labels: Sequence[Any] | None, sample_weight: Any, nan_policy: NanPolicy
) -> tuple[np.ndarray, np.ndarray]:
    t, p, w = paired(y_true, y_pred, sample_weight=sample_weight, nan_policy=nan_policy)
    (ct, cp), classes = encode_labels(t, p, labels=labels)
    k = len(classes)
    cm = np.bincount(ct * k + cp, weights=w, minlength=k * k).reshape(k, k).astype(float)
    return cm, classes


def confusion_matrix(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    sample_weight: Any = None,
    normalize: Literal["true", "pred", "all"] | None = None,
    nan_policy: NanPolicy = "omit",
) -> np.ndarray:
    """Confusion matrix ``C[i, j]``: weight of items labelled ``labels[i]`` by ``y_true`` and
    ``labels[j]`` by ``y_pred`` (labels sorted unless given).

    ``normalize="true"`` divides rows by their sums, ``"pred"`` columns, ``"all"`` the total.

    >>> confusion_matrix(["MET", "MET", "UNMET"], ["MET", "UNMET", "UNMET"]).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    """
    cm, _ = confusion_counts(y_true, y_pred, labels, sample_weight, nan_policy)
    if normalize == "true":
        cm = np.nan_to_num(safe_div(cm, cm.sum(axis=1, keepdims=True)))
    elif normalize == "pred":
        cm = np.nan_to_num(safe_div(cm, cm.sum(axis=0, keepdims=True)))
    elif normalize == "all":
        cm = np.nan_to_num(safe_div(cm, cm.sum()))
    elif normalize is not None:
        raise ValueError("normalize must be 'true', 'pred', 'all' or None")
    return cm


# ----------------------------------------------------------------------------- batched
def accuracy_from_confusion(cm: np.ndarray) -> np.ndarray:
    """Accuracy ``trace(C) / sum(C)`` for a stack of confusion matrices ``(..., K, K)``."""
    return safe_div(np.trace(cm, axis1=-2, axis2=-1), cm.sum(axis=(-2, -1)))


def precision_recall_f1_from_confusion(
    cm: np.ndarray, *, average: Average = "macro", pos_index: int | None = None, zero_division: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 from confusion matrices ``(..., K, K)``.

    Per class *k*: ``tp = C[k, k]``, ``P = tp / sum_i C[i, k]``, ``R = tp / sum_j C[k, j]``,
    ``F1 = 2 tp / (2 tp + fp + fn)``; a 0/0 gives ``zero_division``. ``average`` is
    ``None`` (per class, last axis), ``"binary"`` (class ``pos_index``), ``"macro"``
    (unweighted mean over classes, ignoring NaN), ``"weighted"`` (mean weighted by support)
    or ``"micro"`` (from the pooled counts).
    """
    tp = np.diagonal(cm, axis1=-2, axis2=-1)
    pred = cm.sum(axis=-2)
    true = cm.sum(axis=-1)
    if average == "micro":
        tp_s, pred_s, true_s = tp.sum(-1), pred.sum(-1), true.sum(-1)
        p = np.where(pred_s > 0, safe_div(tp_s, pred_s), zero_division)
        r = np.where(true_s > 0, safe_div(tp_s, true_s), zero_division)
        den = pred_s + true_s
        f = np.where(den > 0, safe_div(2 * tp_s, den), zero_division)
        return p, r, f
    p = np.where(pred > 0, safe_div(tp, pred), zero_division)
    r = np.where(true > 0, safe_div(tp, true), zero_division)
    den = pred + true  # = 2tp + fp + fn
    f = np.where(den > 0, safe_div(2 * tp, den), zero_division)
    if average is None:
        return p, r, f
    if average == "binary":
        if pos_index is None:
            raise ValueError("average='binary' needs pos_index")
        return p[..., pos_index], r[..., pos_index], f[..., pos_index]
    if average == "macro":
        with np.errstate(all="ignore"):
            return _nanmean(p), _nanmean(r), _nanmean(f)
    if average == "weighted":
        tot = true.sum(-1)

        def wmean(m: np.ndarray) -> np.ndarray:
            return np.where(tot > 0, safe_div(np.nansum(m * true, -1), tot), zero_division)

        return wmean(p), wmean(r), wmean(f)
    raise ValueError("average must be None, 'binary', 'macro', 'weighted' or 'micro'")


def _nanmean(a: np.ndarray) -> np.ndarray:
    cnt = (~np.isnan(a)).sum(-1)
    return safe_div(np.nansum(a, -1), cnt)


def mcc_from_confusion(cm: np.ndarray) -> np.ndarray:
    """Matthews correlation (Gorodkin's K-category form) from confusion matrices ``(..., K, K)``:

    ``MCC = (c s - t.p) / sqrt((s^2 - p.p) (s^2 - t.t))`` with ``c = trace(C)``, ``s = sum(C)``,
    ``t`` the row (true) sums and ``p`` the column (predicted) sums. NaN when either side has
    a single class (the denominator is 0).
    """
    t = cm.sum(axis=-1)
    p = cm.sum(axis=-2)
    c = np.trace(cm, axis1=-2, axis2=-1)
    s = cm.sum(axis=(-2, -1))
    cov_tp = c * s - (t * p).sum(-1)
    cov_pp = s * s - (p * p).sum(-1)
    cov_tt = s * s - (t * t).sum(-1)
    return safe_div(cov_tp, np.sqrt(np.clip(cov_tt * cov_pp, 0, None)))


# ----------------------------------------------------------------------------- public
def accuracy(y_true: Any, y_pred: Any, *, sample_weight: Any = None, nan_policy: NanPolicy = "omit") -> float:
    """Fraction of pairs on which the two label sequences agree: ``sum_i [t_i = p_i] / n``.

    NaN when no pair is left.

    >>> accuracy(["MET", "UNMET", "MET"], ["MET", "MET", "MET"])
    0.6666666666666666
    """
    cm, _ = confusion_counts(y_true, y_pred, None, sample_weight, nan_policy)
    return float(accuracy_from_confusion(cm))


def _prf(
    y_true: Any,
    y_pred: Any,
    labels: Sequence[Any] | None,
    average: Average,
    pos_label: Any,
    zero_division: float,
    sample_weight: Any,
    nan_policy: NanPolicy,
) -> tuple[Any, Any, Any]:
    cm, classes = confusion_counts(y_true, y_pred, labels, sample_weight, nan_policy)
    pos_index = None
    if average == "binary":
        cl = classes.tolist()
        if len(cl) > 2:
            raise ValueError(f"average='binary' needs at most 2 labels, got {cl}; use average='macro' or 'weighted'")
        if pos_label not in cl:
            if len(cl) == 2:
                raise ValueError(f"pos_label={pos_label!r} is not one of the labels {cl}")
            # the positive class never occurs: extend the matrix with an empty class
            cm = np.pad(cm, ((0, 1), (0, 1)))
            cl.append(pos_label)
        pos_index = cl.index(pos_label)
    p, r, f = precision_recall_f1_from_confusion(cm, average=average, pos_index=pos_index, zero_division=zero_division)
    if average is None:
        return p, r, f
    return float(p), float(r), float(f)


def precision(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    average: Average = "binary",
    pos_label: Any = "MET",
    zero_division: float = 0.0,
    sample_weight: Any = None,
    nan_policy: NanPolicy = "omit",
) -> Any:
    """Precision ``tp / (tp + fp)`` of ``y_pred`` against ``y_true``.

    ``average`` as in :func:`precision_recall_f1_from_confusion`; with ``"binary"`` the
    positive class is ``pos_label`` (``"MET"`` by default; pass ``1`` for 0/1 labels).
    ``average=None`` returns an array per label.

    >>> precision(["MET", "UNMET", "MET"], ["MET", "MET", "MET"])
    0.6666666666666666
    """
    return _prf(y_true, y_pred, labels, average, pos_label, zero_division, sample_weight, nan_policy)[0]


def recall(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    average: Average = "binary",
    pos_label: Any = "MET",
    zero_division: float = 0.0,
    sample_weight: Any = None,
    nan_policy: NanPolicy = "omit",
) -> Any:
    """Recall (sensitivity) ``tp / (tp + fn)``; arguments as in :func:`precision`.

    >>> recall(["MET", "UNMET", "MET"], ["MET", "MET", "UNMET"])
    0.5
    """
    return _prf(y_true, y_pred, labels, average, pos_label, zero_division, sample_weight, nan_policy)[1]


def f1(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    average: Average = "binary",
    pos_label: Any = "MET",
    zero_division: float = 0.0,
    sample_weight: Any = None,
    nan_policy: NanPolicy = "omit",
) -> Any:
    """F1 ``2 tp / (2 tp + fp + fn)`` (harmonic mean of precision and recall); arguments as
    in :func:`precision`.

    >>> f1(["MET", "UNMET", "MET"], ["MET", "MET", "UNMET"])
    0.5
    """
    return _prf(y_true, y_pred, labels, average, pos_label, zero_division, sample_weight, nan_policy)[2]


def mcc(
    y_true: Any,
    y_pred: Any,
    *,
    labels: Sequence[Any] | None = None,
    sample_weight: Any = None,
    nan_policy: NanPolicy = "omit",
) -> float:
    """Matthews correlation coefficient (binary and multi-class), see :func:`mcc_from_confusion`.

    Unlike scikit-learn, which returns 0 when it is undefined, this returns NaN.

    >>> round(mcc([1, 1, 0, 0], [1, 0, 0, 0]), 4)
    0.5774
    """
    cm, _ = confusion_counts(y_true, y_pred, labels, sample_weight, nan_policy)
    return float(mcc_from_confusion(cm))
