"""Acceptance rules: GEPA's own, and tolerances by objective (rubrify's multi-dimensional rule)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

import rubrictools as rt
from rubrictools.evolution.acceptance import ToleranceAcceptance, acceptance_rule
from tests.evolution.test_evolve import DF, HUMAN, JUDGE, START, Reflector, cue

pytest.importorskip("gepa")


def _proposal(before: list[tuple[float, float]], after: list[tuple[float, float]]) -> NS:
    def ev(pairs: list[tuple[float, float]]) -> NS:
        return NS(objective_scores=[{"agreement": a, "discrimination": d} for a, d in pairs])

    return NS(eval_before=ev(before), eval_after=ev(after))


def test_tolerances_keep_a_gain_that_costs_little_elsewhere_and_nothing_that_only_loses() -> None:
    rule = ToleranceAcceptance({"discrimination": 0.1})
    assert rule.should_accept(_proposal([(0.5, 0.8)] * 2, [(0.6, 0.75)] * 2), None)  # agreement up, small loss
    assert not rule.should_accept(_proposal([(0.5, 0.8)] * 2, [(0.6, 0.6)] * 2), None)  # the loss is too large
    assert not rule.should_accept(_proposal([(0.5, 0.8)] * 2, [(0.5, 0.8)] * 2), None)  # nothing rose
    assert not rule.should_accept(_proposal([(0.5, 0.8)] * 2, [(0.45, 0.9)] * 2), None)  # agreement has no tolerance
    assert "agreement 0.500 -> 0.450" in rule.reject_reason(_proposal([(0.5, 0.8)], [(0.45, 0.9)]), None)
    assert acceptance_rule("improvement") == "strict_improvement"
    assert acceptance_rule("improvement_or_equal") == "improvement_or_equal"


def test_bad_acceptance_settings_are_refused_naming_the_field() -> None:
    for value, error, message in [
        ("better", ValueError, "acceptance must be 'improvement', 'improvement_or_equal' or a mapping"),
        ({"kappa": 0.1}, ValueError, r"unknown objective\(s\) \['kappa'\]"),
        ({"agreement": -0.1}, ValueError, r"acceptance\['agreement'\] must be a tolerance in \[0, 1\]"),
        ({}, TypeError, "a non-empty mapping"),
    ]:
        with pytest.raises(error, match=message):
            rt.evolve_rubric(DF, HUMAN, START, model=JUDGE, reflection_model=Reflector(), acceptance=value, cache=False)


def test_a_run_with_tolerances_finds_the_rule_and_patience_stops_it_once_nothing_improves() -> None:
    kw = {"model": JUDGE, "minibatch_size": 4, "n_resamples": 50, "cache": False, "discrimination_weight": 0.2}
    tolerant = rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), max_metric_calls=400,
                                acceptance={"discrimination": 0.05}, **kw)  # fmt: skip
    patient = rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), max_metric_calls=400, patience=2, **kw)
    full = rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), max_metric_calls=400, **kw)
    for e in (tolerant, patient, full):
        assert cue(e.rubric["cites"].requirement) == "ref"
    assert patient.metric_calls < full.metric_calls  # the budget is not spent after the search has converged
    with pytest.raises(ValueError, match="acceptance= tolerances need discrimination_weight > 0"):
        rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), acceptance={"agreement": 0.2},
                         **{**kw, "discrimination_weight": 0.0})  # fmt: skip
    with pytest.raises(ValueError, match="discrimination_weight > 0 needs minibatch_size >= 2"):
        rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), acceptance={"discrimination": 0.05},
                         **{**kw, "minibatch_size": 1})  # fmt: skip
    with pytest.raises(ValueError, match="patience must be an int >= 1 or None, got 0"):
        rt.evolve_rubric(DF, HUMAN, START, reflection_model=Reflector(), patience=0, **kw)


def test_a_small_held_out_set_is_said_to_be_small() -> None:
    few = DF.head(24)
    human = HUMAN.filter(HUMAN["id"] < 24)
    with pytest.warns(UserWarning, match=r"only 7 submissions are held out: .* raise holdout= \(now 0.3\)"):
        rt.evolve_rubric(few, human, START, model=JUDGE, reflection_model=Reflector(), max_metric_calls=40,
                         minibatch_size=2, n_resamples=20, cache=False)  # fmt: skip
