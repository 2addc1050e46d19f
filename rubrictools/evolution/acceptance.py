"""When GEPA keeps a mutation: its acceptance rule, from ``evolve_rubric(acceptance=...)``.

A mutation is tried on a training minibatch; the rule compares the minibatch's scores before
and after. ``"improvement"`` (GEPA's default) keeps it when their sum rises;
``"improvement_or_equal"`` also keeps lateral moves. A mapping of **tolerances** by objective
(``{"agreement": 0.0, "discrimination": 0.05}``, rubrify's multi-dimensional acceptance) keeps a
mutation when the mean of some objective rises and none falls by more than its tolerance
(objectives not named may not fall at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np

__all__ = ["OBJECTIVES", "ToleranceAcceptance", "acceptance_rule", "objective_change", "objective_means"]

OBJECTIVES = ("agreement", "discrimination")
"""The objectives each evaluated submission reports (see :mod:`rubrictools.evolution.adapter`)."""


class ToleranceAcceptance:
    """Keep a mutation when some objective's mean over the minibatch rises and none falls by
    more than its tolerance.

    >>> from types import SimpleNamespace as NS
    >>> rule = ToleranceAcceptance({"discrimination": 0.1})
    >>> before = NS(objective_scores=[{"agreement": 0.5, "discrimination": 0.8}])
    >>> after = NS(objective_scores=[{"agreement": 0.7, "discrimination": 0.75}])
    >>> rule.should_accept(NS(eval_before=before, eval_after=after), None)
    True
    """

    def __init__(self, tolerances: Mapping[str, float]) -> None:
        self.tolerances = {k: float(tolerances.get(k, 0.0)) for k in OBJECTIVES}

    def should_accept(self, proposal: Any, state: Any) -> bool:
        """GEPA's ``AcceptanceCriterion``."""
        before, after = objective_means(proposal.eval_before), objective_means(proposal.eval_after)
        change = {k: after[k] - before[k] for k in OBJECTIVES}
        return any(d > 1e-12 for d in change.values()) and all(
            change[k] >= -self.tolerances[k] - 1e-12 for k in OBJECTIVES
        )

    def reject_reason(self, proposal: Any, state: Any) -> str:
        """Why a mutation was not kept, for GEPA's log."""
        return objective_change(proposal)


def objective_means(evaluation: Any) -> dict[str, float]:
    """Each objective's mean over an evaluated minibatch (0 when it holds no objective scores)."""
    rows = list(getattr(evaluation, "objective_scores", None) or [])
    return {k: float(np.mean([r.get(k, 0.0) for r in rows])) if rows else 0.0 for k in OBJECTIVES}


def objective_change(proposal: Any) -> str:
    """A proposal's change in each objective's minibatch mean, in words (GEPA's log)."""
    before, after = objective_means(proposal.eval_before), objective_means(proposal.eval_after)
    return ", ".join(f"{k} {before[k]:.3f} -> {after[k]:.3f}" for k in OBJECTIVES)


def acceptance_rule(acceptance: str | Mapping[str, float]) -> Any:
    """GEPA's ``acceptance_criterion`` for ``acceptance``; a bad value raises, naming the field."""
    if isinstance(acceptance, str):
        names = {"improvement": "strict_improvement", "improvement_or_equal": "improvement_or_equal"}
        if acceptance not in names:
            raise ValueError(
                f"acceptance must be 'improvement', 'improvement_or_equal' or a mapping of tolerances by objective "
                f"{list(OBJECTIVES)}, got {acceptance!r}"
            )
        return names[acceptance]
    if not isinstance(acceptance, Mapping) or not acceptance:
        raise TypeError(f"acceptance must be a name or a non-empty mapping of tolerances, got {acceptance!r}")
    unknown = sorted(set(map(str, acceptance)) - set(OBJECTIVES))
    if unknown:
        raise ValueError(f"acceptance names unknown objective(s) {unknown}; the objectives are {list(OBJECTIVES)}")
    for k, v in acceptance.items():
        if isinstance(v, bool) or not isinstance(v, Real) or not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"acceptance[{k!r}] must be a tolerance in [0, 1], got {v!r}")
    return ToleranceAcceptance(acceptance)
