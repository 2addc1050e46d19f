"""How a metric is named where a person reads it (chart panels and axes, tables, progress
lines): words, not identifiers."""

from __future__ import annotations

__all__ = ["METRIC_NAMES", "metric_words"]

METRIC_NAMES = {
    "cohen_kappa": "Cohen's kappa",
    "kappa_linear": "linear-weighted kappa",
    "kappa_quadratic": "quadratic-weighted kappa",
    "cohen_kappa_pairwise": "mean pairwise Cohen's kappa",
    "kappa_quadratic_pairwise": "mean pairwise quadratic-weighted kappa",
    "fleiss_kappa": "Fleiss' kappa",
    "gwet_ac1": "Gwet's AC1",
    "krippendorff_alpha": "Krippendorff's alpha",
    "icc2": "ICC(2,1)",
    "icc3": "ICC(3,1)",
    "spearman": "Spearman's rho",
    "kendall": "Kendall's tau",
    "pearson": "Pearson's r",
    "mcc": "MCC",
    "f1": "F1",
    "mae": "MAE",
    "rmse": "RMSE",
    "percent_agreement": "percent agreement",
}
"""A metric identifier to its name in words."""


def metric_words(metric: str) -> str:
    """``metric`` in words: a known identifier by its name, any other with spaces for underscores.

    >>> metric_words("cohen_kappa"), metric_words("my_metric")
    ("Cohen's kappa", 'my metric')
    """
    return METRIC_NAMES.get(metric, metric.replace("_", " "))
