"""Agreement, correlation, error and distribution metrics (one function per metric).

Uniform conventions (see :mod:`rubrictools.metrics._base`): pairwise metrics take
``(y_true, y_pred)`` (human first, judge second) or ``(x, y)``; multi-rater metrics take a
``(units, raters)`` ratings matrix; missing values drop the pair; undefined results are NaN.
Metrics with inference return an :class:`Estimate` (a float with ``pvalue``/``se`` extras).

>>> from rubrictools import metrics as m
>>> round(m.cohen_kappa(["MET", "MET", "UNMET", "UNMET"], ["MET", "UNMET", "UNMET", "UNMET"]), 3)
0.5
"""

from rubrictools.metrics._base import Estimate, rating_counts
from rubrictools.metrics.classification import accuracy, confusion_matrix, f1, mcc, precision, recall
from rubrictools.metrics.correlation import kendall, pearson, spearman
from rubrictools.metrics.distribution import js_divergence, ks_2samp, wasserstein
from rubrictools.metrics.errors import mae, mean_bias, rmse, rmse_affine
from rubrictools.metrics.kappa import cohen_kappa, gwet_ac1
from rubrictools.metrics.multirater import fleiss_kappa, icc, krippendorff_alpha, percent_agreement
from rubrictools.metrics.names import METRIC_NAMES, metric_words
from rubrictools.metrics.probability import brier_score, expected_calibration_error, reliability_table
from rubrictools.metrics.resampling import (
    Interval,
    Kernel,
    bootstrap,
    check_names,
    check_resampling,
    cluster_weights,
    interval,
    with_ci_level,
)
from rubrictools.metrics.spread import consistency, discrimination

__all__ = [
    "METRIC_NAMES",
    "Estimate",
    "Interval",
    "Kernel",
    "accuracy",
    "bootstrap",
    "brier_score",
    "check_names",
    "check_resampling",
    "cluster_weights",
    "cohen_kappa",
    "confusion_matrix",
    "consistency",
    "discrimination",
    "expected_calibration_error",
    "f1",
    "fleiss_kappa",
    "gwet_ac1",
    "icc",
    "interval",
    "js_divergence",
    "kendall",
    "krippendorff_alpha",
    "ks_2samp",
    "mae",
    "mcc",
    "mean_bias",
    "metric_words",
    "pearson",
    "percent_agreement",
    "precision",
    "rating_counts",
    "recall",
    "reliability_table",
    "rmse",
    "rmse_affine",
    "spearman",
    "wasserstein",
    "with_ci_level",
]
