"""Which agreement metrics exist, which apply to which criterion kind, and the defaults."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

from rubrictools.stack import user_stacklevel

__all__ = [
    "BINARY_ONLY",
    "CONFUSION_METRICS",
    "CRITERION_METRICS",
    "DEFAULT_METRICS",
    "INTER_RATER_METRICS",
    "KENDALL_MAX_ROWS",
    "OPT_IN",
    "ORDERED_ONLY",
    "PVALUE",
    "SCORE",
    "SCORE_METRICS",
    "Level",
    "Method",
    "NaMode",
    "Raters",
    "check_metrics",
    "inapplicable_note",
    "leave_out_or_refuse",
]


SCORE = "__score__"
"""Group label of score-level rows (rubric score of the judge vs of the human)."""


DEFAULT_METRICS: dict[str, tuple[str, ...]] = {
    "binary": ("accuracy", "precision", "recall", "f1", "mcc", "cohen_kappa", "gwet_ac1", "judge_rate", "human_rate"),
    "ordinal": (
        "accuracy",
        "cohen_kappa",
        "kappa_linear",
        "kappa_quadratic",
        "spearman",
        "kendall",
        "mae",
        "js_divergence",
    ),
    "nominal": ("accuracy", "f1_macro", "cohen_kappa", "gwet_ac1", "js_divergence"),
}


CRITERION_METRICS: tuple[str, ...] = (
    "accuracy",
    "precision",
    "recall",
    "f1",
    "f1_macro",
    "mcc",
    "cohen_kappa",
    "kappa_linear",
    "kappa_quadratic",
    "gwet_ac1",
    "spearman",
    "kendall",
    "mae",
    "judge_rate",
    "human_rate",
    "js_divergence",
)


CONFUSION_METRICS = frozenset(CRITERION_METRICS) - {"spearman", "kendall", "mae"}
"""Criterion metrics computed from a confusion matrix (the rest need the paired values)."""


SCORE_METRICS: tuple[str, ...] = (
    "pearson",
    "spearman",
    "kendall",
    "rmse",
    "mae",
    "bias",
    "effect_size",
    "wasserstein",
    "ks",
    "rmse_affine",
)


OPT_IN = {"rmse_affine"}  # asked for by name only


INTER_RATER_METRICS: tuple[str, ...] = (
    "fleiss_kappa",
    "gwet_ac1",
    "percent_agreement",
    "krippendorff_alpha",
    "cohen_kappa_pairwise",
    "kappa_quadratic_pairwise",
    "icc2",
    "icc3",
)


ORDERED_ONLY = {
    "kappa_linear", "kappa_quadratic", "kappa_quadratic_pairwise", "spearman", "kendall", "mae", "icc2", "icc3",
}  # fmt: skip


BINARY_ONLY = {"precision", "recall", "f1", "judge_rate", "human_rate"}


PVALUE = {"cohen_kappa", "pearson", "spearman", "kendall", "bias", "ks"}


KENDALL_MAX_ROWS = 5000


NaMode = Literal["exclude", "as_category", "as_worst"]


Raters = Literal["each", "consensus"]


Level = Literal["criterion", "score", "both"]


Method = Literal["percentile", "bca"]


def check_metrics(metrics: Sequence[str] | None, allowed: Sequence[str], what: str) -> list[str] | None:
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = [metrics]
    if len(metrics) == 0:
        raise ValueError(f"metrics=[] asks for no {what} metric: pass None for every metric that applies")
    bad = [m for m in metrics if m not in allowed]
    if bad:
        raise ValueError(f"unknown {what} metric(s) {bad}; choose from {list(dict.fromkeys(allowed))}")
    return list(metrics)


def inapplicable_note(names: list[str], group: dict[str, Any], kind: str) -> str:
    """How metrics asked for that do not apply to a group's labels are named: ``['f1'] on
    {'criterion': 'n'} (ordinal)``."""
    return f"{names} on {group or 'the pooled labels'} ({kind})"


def leave_out_or_refuse(fn: str, notes: list[str], *, computed: bool, refuse: str, left_out: str) -> None:
    """The metrics asked for that did not apply (``notes``, from :func:`inapplicable_note`):
    refused when nothing asked for was computed (``computed`` false), else left out with a warning."""
    if not notes:
        return
    what = "; ".join(notes)
    if not computed:
        raise ValueError(f"{fn}: no metric asked for applies: {what}; {refuse}")
    warnings.warn(f"{fn}: left out {what}: {left_out}", UserWarning, stacklevel=user_stacklevel())
