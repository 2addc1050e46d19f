"""Numeric scales, scoring groups, disqualifiers, required criteria and decision thresholds."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt


def _table(rubric, rows):
    ids, crits, verdicts = [], [], []
    for i, labels in enumerate(rows):
        for n, lab in zip(rubric.names, labels, strict=False):
            ids.append(i)
            crits.append(n)
            verdicts.append(lab)
    return pl.DataFrame({"id": ids, "criterion": crits, "verdict": verdicts})


# ------------------------------------------------------------------ numeric
def test_numeric_scale_normalises_and_validates():
    r = rt.Rubric.from_dict(
        [
            {
                "name": "clarity",
                "requirement": "How clear",
                "range": {"min": 1, "max": 5, "step": 0.5, "anchors": {1: "opaque", 5: "crystal"}},
            }
        ]
    )
    c = r["clarity"]
    assert c.kind == "numeric" and c.labels[:3] == ("1", "1.5", "2")
    assert c.value_of("3") == 0.5 and c.canonical_label(" 4.50 ") == "4.5" and c.canonical_label("4.2") is None
    v = rt.validate_verdicts(pl.DataFrame({"id": [1, 2], "criterion": "clarity", "verdict": ["5.0", "1"]}), r)
    assert v["verdict"].to_list() == ["5", "1"] and v["value"].to_list() == [1.0, 0.0]
    with pytest.raises(ValueError, match=r"allowed: a number from 1 to 5 in steps of 0.5"):
        rt.validate_verdicts(pl.DataFrame({"id": [1], "criterion": "clarity", "verdict": ["6"]}), r)
    with pytest.raises(ValueError, match="allowed: a number"):
        rt.validate_verdicts(pl.DataFrame({"id": [1], "criterion": "clarity", "verdict": ["great"]}), r)


def test_continuous_numeric_scale_scores_any_number_in_range():
    r = rt.Rubric.from_dict(
        [{"name": "x", "requirement": "r", "range": {"min": 0, "max": 10}}, {"name": "b", "requirement": "q"}]
    )
    s = rt.score(_table(r, [["2.5", "MET"], ["10", "UNMET"]]), r)
    assert s["score"].to_list() == pytest.approx([(0.25 * 10 + 10) / 20, 0.5])


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"range": {"min": 5, "max": 1}}, "range.max (1) must be greater than range.min (5)"),
        ({"range": {"min": 0, "max": 5, "step": 2}}, "does not divide"),
        ({"range": {"min": 0, "max": 5, "anchors": {7: "x"}}}, "7 is not a point of the scale"),
        ({"scale": "numeric"}, "needs range"),
        ({"range": {"min": 0, "max": 1}, "options": [{"label": "a"}, {"label": "b", "value": 1}]}, "not options"),
    ],
)
def test_bad_numeric_scales_name_the_field(spec, message):
    with pytest.raises(ValueError) as e:
        rt.Rubric.from_dict([{"name": "n", "requirement": "r", **spec}])
    assert "criterion 0 ('n')" in str(e.value) and message in str(e.value)


# ------------------------------------------------------------------ groups
@pytest.fixture
def grouped():
    return rt.Rubric.from_dict(
        {
            "criteria": [
                {"name": "a", "requirement": "A", "group": "content"},
                {"name": "b", "requirement": "B", "weight": 5, "group": "content"},
                {"name": "c", "requirement": "C", "group": "style"},
                {"name": "p", "requirement": "P", "weight": -5, "group": "style"},
            ],
            "groups": [{"name": "content", "weight": 3}, {"name": "style", "weight": 1, "aggregation": "min"}],
        }
    )


def test_group_subscores_and_weighted_overall(grouped):
    s = rt.score(_table(grouped, [["MET", "UNMET", "MET", "MET"], ["MET", "MET", "MET", "UNMET"]]), grouped)
    assert s.columns[:6] == ["id", "score", "raw_score", "cannot_assess_count", "error_count", "error"]
    assert s["score:content"].to_list() == pytest.approx([10 / 15, 1.0])
    assert s["score:style"].to_list() == pytest.approx([0.0, 1.0])  # min(c=1, p credit=0)
    assert s["score"].to_list() == pytest.approx([(3 * 10 / 15 + 0) / 4, 1.0])
    assert s["raw_score"].to_list() == [15.0, 25.0]  # the raw weighted sum is unchanged by groups


@pytest.mark.parametrize(
    "agg, expected", [("weighted_mean", 0.5), ("min", 0.0), ("max", 1.0), ("all", 0.0), ("any", 1.0)]
)
def test_each_group_aggregation(agg, expected):
    r = rt.Rubric.from_dict(
        {
            "criteria": [
                {"name": "a", "requirement": "A", "group": "g"},
                {"name": "b", "requirement": "B", "group": "g"},
            ],
            "groups": [{"name": "g", "aggregation": agg}],
        }
    )
    assert rt.score(_table(r, [["MET", "UNMET"]]), r)["score:g"].item() == pytest.approx(expected)


def test_group_with_only_skipped_criteria_drops_out_of_the_overall(grouped):
    s = rt.score(_table(grouped, [["MET", "MET", "CANNOT_ASSESS", "CANNOT_ASSESS"]]), grouped)
    assert s["score:style"].item() is None and s["score"].item() == 1.0


def test_errored_submission_has_null_group_scores(grouped):
    t = _table(grouped, [["MET", "MET", "MET", "UNMET"]]).with_columns(
        pl.when(pl.col("criterion") == "a").then(pl.lit("timeout")).otherwise(None).alias("error")
    )
    s = rt.score(t, grouped)
    assert s["score"].item() is None and s["score:content"].item() is None


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"criteria": [{"name": "a", "requirement": "A", "group": "nope"}], "groups": [{"name": "g"}]},
            "criterion 0 ('a'): field 'group': unknown group 'nope'",
        ),
        (
            {"criteria": [{"name": "a", "requirement": "A"}], "groups": [{"name": "g"}]},
            "every scored criterion must name one",
        ),
        (
            {"criteria": [{"name": "a", "requirement": "A", "group": "g"}], "groups": [{"name": "g"}, {"name": "G"}]},
            "duplicate group name",
        ),
        (
            {
                "criteria": [{"name": "a", "requirement": "A", "group": "g"}],
                "groups": [{"name": "g", "aggregation": "avg"}],
            },
            "groups[0]: field 'aggregation'",
        ),
        (
            {"criteria": [{"name": "a", "requirement": "A", "group": "g"}], "groups": [{"name": "g"}, {"name": "h"}]},
            "['h'] have no criteria",
        ),
    ],
)
def test_bad_groups_get_clear_errors(data, message):
    with pytest.raises(ValueError) as e:
        rt.Rubric.from_dict(data)
    assert message in str(e.value)


# ------------------------------------------------------------------ disqualifiers
def test_disqualifier_caps_the_score_and_says_why():
    r = rt.Rubric.from_dict(
        [
            {"name": "a", "requirement": "A"},
            {"name": "leak", "requirement": "Reveals the system prompt", "disqualifier": True},
            {"name": "slop", "requirement": "Filler", "disqualifier": True, "cap": 0.5},
        ]
    )
    assert r["leak"].weight == 0
    s = rt.score(
        _table(r, [["MET", "UNMET", "UNMET"], ["MET", "MET", "UNMET"], ["MET", "UNMET", "MET"], ["MET", "MET", "MET"]]),
        r,
    )
    assert s["score"].to_list() == [1.0, 0.0, 0.5, 0.0]
    assert s["disqualified"].to_list() == [
        None,
        "capped at 0.0 by leak",
        "capped at 0.5 by slop",
        "capped at 0.0 by leak, slop",
    ]
    assert s["raw_score"].to_list() == [10.0] * 4


def test_required_criterion_caps_when_it_earns_its_lowest_outcome():
    r = rt.Rubric.from_dict(
        [
            {"name": "safe", "requirement": "S", "required": True},
            {
                "name": "q",
                "requirement": "Q",
                "options": [{"label": "low", "value": 0.2}, {"label": "high", "value": 1}],
                "required": True,
                "cap": 0.3,
            },
        ]
    )
    s = rt.score(_table(r, [["MET", "high"], ["UNMET", "high"], ["MET", "low"]]), r)
    assert s["score"].to_list() == pytest.approx([1.0, 0.0, 0.3])


def test_disqualifier_validation():
    with pytest.raises(ValueError, match="acts through its cap, not its weight"):
        rt.Criterion(requirement="x", disqualifier=True, weight=5)
    with pytest.raises(ValueError, match="cap only applies"):
        rt.Criterion(requirement="x", cap=0.5)
    with pytest.raises(ValueError, match="cap must be a score in"):
        rt.Criterion(requirement="x", disqualifier=True, cap=2)
    with pytest.raises(ValueError, match="disqualifier must be binary"):
        rt.Criterion(requirement="x", disqualifier=True, options=[{"label": "a"}, {"label": "b", "value": 1}])


# ------------------------------------------------------------------ thresholds
def test_thresholds_label_scores_from_rubric_or_argument():
    r = rt.Rubric.from_dict(
        {
            "criteria": [{"name": "a", "requirement": "A"}, {"name": "b", "requirement": "B"}],
            "thresholds": {"pass": 1.0, "borderline": 0.5},
        }
    )
    s = rt.score(_table(r, [["MET", "MET"], ["MET", "UNMET"], ["UNMET", "UNMET"]]), r)
    assert s["decision"].to_list() == ["pass", "borderline", None]
    s2 = rt.score(_table(r, [["MET", "UNMET"]]), r, thresholds=[("ok", 0.4), ("bad", 0.0)])
    assert s2["decision"].to_list() == ["ok"]
    assert "decision" not in rt.score(_table(r, [["MET", "UNMET"]]), r, thresholds=False).columns


@pytest.mark.parametrize(
    "cuts, message",
    [
        ({"fail": 0.0, "pass": 0.8}, "'pass' (0.8) comes after 'fail' (0)"),
        ([("a", 0.5), ("b", 0.5)], "strictly decreasing"),
        ([("a", 0.5), ("A", 0.2)], "duplicate labels"),
        ([("a",)], "thresholds[0]"),
        ({"a": float("nan")}, "thresholds[0]: field 'min'"),
    ],
)
def test_bad_thresholds_get_clear_errors(cuts, message):
    with pytest.raises(ValueError) as e:
        rt.Rubric.from_dict({"criteria": [{"name": "a", "requirement": "A"}], "thresholds": cuts})
    assert message in str(e.value)


def test_round_trip_of_a_rubric_with_every_feature(tmp_path):
    r = rt.Rubric.from_dict(
        {
            "criteria": [
                {
                    "name": "n",
                    "requirement": "N",
                    "range": {"min": 0, "max": 4, "step": 1, "anchors": {0: "none", 4: "all"}},
                    "group": "g",
                },
                {
                    "name": "o",
                    "requirement": "O",
                    "options": [{"label": "x", "value": 0, "description": "bad"}, {"label": "y", "value": 1}],
                    "group": "g",
                    "required": True,
                    "cap": 0.2,
                    "evidence": True,
                },
                {"name": "r", "rule": {"regex": "^#", "flags": "m"}, "group": "g"},
                {"name": "dq", "requirement": "D", "disqualifier": True},
            ],
            "groups": [{"name": "g", "aggregation": "max", "weight": 2}],
            "thresholds": [("good", 0.7), ("bad", 0)],
        }
    )
    assert rt.Rubric.from_dict(r.to_dict()) == r
    assert rt.Rubric.from_yaml(r.to_yaml()) == r
    p = tmp_path / "r.json"
    p.write_text(r.to_json())
    assert rt.Rubric.from_file(p) == r
    assert "numeric 0 to 4" in str(r) and "disqualifier" in r._repr_html_()
