"""The checks :func:`rubrictools.evolve_rubric` makes before any call, and its splits of the
labelled submissions: every bad setting refused naming the field."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rubrictools.evolution.acceptance import acceptance_rule
from rubrictools.evolution.components import to_candidate
from rubrictools.evolution.gate import ProposalGate
from rubrictools.evolution.reflection import check_templates
from rubrictools.human_agreement import agreement, human_frame
from rubrictools.judge.config import Judge
from rubrictools.rubric import Rubric
from rubrictools.stack import user_stacklevel

MAX_RUNS = 10
"""The most repeated gradings of each submission ``consistency_runs`` may ask for."""

__all__ = [
    "FEW_HELD_OUT",
    "MAX_RUNS",
    "check_human",
    "check_labels",
    "check_settings",
    "split_train",
]


def check_settings(rubric: Rubric, frame: pl.DataFrame, column: str, id_column: str, numbers: dict[str, Any]) -> None:
    """Every setting checked, with the field named, before any call."""
    if not isinstance(rubric, Rubric):
        raise TypeError(f"rubric must be a rubrictools Rubric (rt.Rubric.from_dict(...)), got {type(rubric).__name__}")
    if frame.height == 0:
        raise ValueError("df is empty: there is no submission to grade")
    for name, col in (("column", column), ("id_column", id_column)):
        if col not in frame.columns:
            raise ValueError(f"{name}={col!r} is not a column of df (columns: {frame.columns})")
    nulls = frame.filter(pl.col(column).is_null())[id_column].head(3).to_list()
    if nulls:
        raise ValueError(f"column {column!r} of df has null submissions (ids {nulls}...): drop or fill them first")
    for name in ("holdout", "validation"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Real) or not 0.0 < float(v) < 1.0:
            raise ValueError(f"{name} must be a fraction in (0, 1), got {v!r}")
    for name in ("max_metric_calls", "minibatch_size", "seed"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Integral) or v < (0 if name == "seed" else 1):
            raise ValueError(f"{name} must be an int >= {0 if name == 'seed' else 1}, got {v!r}")
    for name in ("agreement_weight", "discrimination_weight", "consistency_weight"):
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, Real) or v < 0 or not np.isfinite(float(v)):
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")
    if numbers["agreement_weight"] + numbers["discrimination_weight"] + numbers["consistency_weight"] <= 0:
        raise ValueError("agreement_weight, discrimination_weight and consistency_weight cannot all be 0")
    _check_consistency(numbers)
    for name in ("evolve_weights", "verbose"):
        if not isinstance(numbers[name], bool):
            raise TypeError(f"{name} must be True or False, got {numbers[name]!r}")
    if numbers["evolve_weights"] and numbers["discrimination_weight"] == 0:
        raise ValueError(
            "evolve_weights=True needs discrimination_weight > 0: agreement is measured per criterion, so weights "
            "never change it and no weight change could be kept"
        )
    if numbers["discrimination_weight"] > 0 and numbers["minibatch_size"] < 2:
        raise ValueError(
            "discrimination_weight > 0 needs minibatch_size >= 2: discrimination is the spread of a minibatch's "
            "scores, always 0 for one submission (about 10 or more make it meaningful)"
        )
    components = to_candidate(rubric, weights=numbers["evolve_weights"])
    check_templates(numbers["reflection_template"], components)
    acceptance_rule(numbers["acceptance"])
    if isinstance(numbers["acceptance"], Mapping) and numbers["discrimination_weight"] == 0:
        raise ValueError(
            "acceptance= tolerances need discrimination_weight > 0: with it at 0 discrimination is never measured, so "
            "a mapping of tolerances is the same as acceptance='improvement'"
        )
    gate = numbers["gate"]
    if gate is not None and not isinstance(gate, ProposalGate):
        raise TypeError(f"gate must be a rubrictools.evolution.ProposalGate or None, got {type(gate).__name__}")
    if gate is not None:
        gate.validate()  # a field changed after the gate was built is checked too
    patience = numbers["patience"]
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, Integral) or patience < 1):
        raise ValueError(f"patience must be an int >= 1 or None, got {patience!r}")
    cache = numbers["cache"]
    if not isinstance(cache, (bool, str, Path)):
        raise TypeError(f"cache must be True, False or a file path, got {type(cache).__name__}")


FEW_HELD_OUT = 10
"""Fewer held-out submissions than this draw a warning: the final comparison rests on them."""

_CHANCE_CORRECTED = ("cohen_kappa", "kappa_linear", "kappa_quadratic", "gwet_ac1", "mcc")


def _check_consistency(numbers: dict[str, Any]) -> None:
    """consistency_runs and consistency_weight go together, with a judge that can sample."""
    given, weight = numbers["consistency_runs"], numbers["consistency_weight"]
    if isinstance(given, bool) or not isinstance(given, Integral) or not 1 <= int(given) <= MAX_RUNS:
        raise ValueError(f"consistency_runs must be an int from 1 to {MAX_RUNS}, got {given!r}")
    runs = int(given)
    if (runs > 1) != (weight > 0):
        raise ValueError(
            "consistency_weight > 0 needs consistency_runs >= 2 (each submission graded that many times), and "
            f"consistency_runs > 1 needs consistency_weight > 0 (got consistency_runs={runs}, "
            f"consistency_weight={weight})"
        )
    model = numbers["model"]
    if runs > 1 and not isinstance(model, (str, Judge)):
        raise ValueError(
            "consistency across repeated runs needs a judge that samples: a model string or a rubrictools Judge "
            f"(got {type(model).__name__})"
        )
    if runs > 1 and (isinstance(model, str) or model.temperature == 0):
        warnings.warn(
            f"consistency_runs={runs} with a judge at temperature 0: its repeated gradings barely differ, so "
            "consistency stays near 1 while the search's judge calls are multiplied; pass "
            "model=rt.Judge(model=..., temperature=0.7) or so",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def check_labels(h: pl.DataFrame, rubric: Rubric, metric: str) -> None:
    """The human labels and ``metric`` as the final comparison will read them, checked before
    any call: criteria of the rubric, labels its criteria allow, a metric that exists."""
    unknown = sorted(set(h["criterion"].unique().to_list()) - set(rubric.names))
    if unknown:
        raise ValueError(f"human labels name criteria not in the rubric: {unknown} (rubric: {list(rubric.names)})")
    judged = {c.name or "" for c in rubric if c.rule is None}
    if not judged & set(h["criterion"].to_list()):
        raise ValueError(f"no human label for any judge-decided criterion of the rubric ({sorted(judged)})")
    first = h.unique(["id", "criterion"], keep="first", maintain_order=True).select(
        "id", "criterion", pl.col("label").cast(pl.String).alias("verdict")
    )
    agreement(first, h, rubric, metrics=[metric], level="criterion", n_resamples=0)  # raises naming the problem
    constant = sorted(
        c for c, n in h.group_by("criterion").agg(pl.col("label").cast(pl.String).n_unique()).iter_rows() if n < 2
    )
    if constant and metric in _CHANCE_CORRECTED:
        warnings.warn(
            f"the human labels of {constant} are all one label: {metric} (chance-corrected) is 0 or undefined for "
            "any judge there, so it cannot show a change; metric='accuracy' can",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def split_train(order: list[Any], validation: float, seed: int, minibatch_size: int, budget: int) -> tuple[list, list]:
    """GEPA's training and validation ids; a minibatch or a budget too small for them is refused."""
    perm = np.random.default_rng(seed + 1).permutation(len(order))
    n_val = min(max(2, round(validation * len(order))), len(order) - 2)
    val = [order[i] for i in sorted(perm[:n_val])]
    train = [i for i in order if i not in set(val)]
    if minibatch_size > len(train):
        raise ValueError(
            f"minibatch_size={minibatch_size} is more than the {len(train)} training submissions left after "
            "holdout= and validation= took their shares: lower one of the three"
        )
    least = len(val) + 2 * minibatch_size
    if budget < least:
        raise ValueError(
            f"max_metric_calls={budget} cannot evolve anything: grading the {len(val)} validation submissions and "
            f"one mutation's minibatch twice takes {least}"
        )
    return train, val


def check_human(human: Any, id_type: pl.DataType) -> pl.DataFrame:
    h = human_frame(human)
    try:
        return h.with_columns(pl.col("id").cast(id_type))
    except pl.exceptions.InvalidOperationError:
        raise ValueError(
            f"human label ids ({h.schema['id']}, e.g. {h['id'][0]!r}) cannot be matched to df's ids ({id_type})"
        ) from None
