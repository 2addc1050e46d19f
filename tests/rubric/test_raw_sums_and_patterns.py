"""rubrify's weighted_sum groups (raw sums beside the 0-1 score) and pattern libraries."""

from __future__ import annotations

import random
import warnings

import polars as pl
import pytest

import rubrictools as rt

SPEC = {
    "criteria": [
        {"id": "a", "title": "A", "description": "x", "weight": 3, "scale": {"kind": "binary"}},
        {"id": "b", "title": "B", "description": "y", "weight": 2, "scale": {"kind": "binary"}},
        {"id": "c", "title": "C", "description": "z", "weight": 1, "scale": {"kind": "binary"}},
    ],
    "groups": [
        {"id": "g", "children": ["a", "b"], "aggregation": "weighted_sum"},
        {"id": "h", "children": ["c"], "weight": 2},
        {"id": "top", "children": ["g", "h"], "aggregation": "weighted_sum"},
    ],
    "patterns": [
        {"id": "delve", "pattern": r"\bdelve\b", "description": "LLM tic: delve"},
        {"id": "TAPESTRY", "pattern": "TAPESTRY", "case_insensitive": False},
    ],
}


def test_weighted_sum_groups_report_their_raw_sum_beside_the_normalised_score() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing of this spec is skipped any more
        r = rt.Rubric.from_rubrify({k: v for k, v in SPEC.items() if k != "patterns"})
    assert {g.name: g.aggregation for g in r.groups}["g"] == "weighted_sum"
    rng = random.Random(3)
    rows = [(i, n, rng.choice(["MET", "UNMET"])) for i in range(40) for n in ("a", "b", "c")]
    v = pl.DataFrame(rows, schema=["id", "criterion", "verdict"], orient="row")
    s = rt.score(v, r)
    for i in range(40):
        lab = {n: x == "MET" for j, n, x in rows if j == i}
        raw_g = 3 * lab["a"] + 2 * lab["b"]
        s_g, s_h = raw_g / 5, float(lab["c"])
        got = s.row(i, named=True)
        assert got["raw:g"] == raw_g and got["raw:top"] == pytest.approx(1 * s_g + 2 * s_h)
        assert got["score:g"] == pytest.approx(s_g) and got["score"] == pytest.approx((s_g + 2 * s_h) / 3)
    assert "raw:h" not in s.columns  # weighted_mean groups have no raw column


def test_pattern_library_entries_are_unscored_rule_criteria_whose_hits_are_listed() -> None:
    r = rt.Rubric.from_rubrify(SPEC)
    pats = [c for c in r if "pattern" in c.tags]
    assert [c.name for c in pats] == ["pattern:delve", "pattern:TAPESTRY"] and {c.weight for c in pats} == {0}
    df = pl.DataFrame({"submission": ["Let us delve into the tapestry", "A TAPESTRY, no tics", "plain"]})
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET")
    v = rt.grade(df, r, model=judge, progress=False, record=False)
    assert v.filter(pl.col("criterion").str.starts_with("pattern:"))["judge"].unique().to_list() == ["rule"]
    s = rt.score(v, r)
    assert s["pattern_hits"].to_list() == [["pattern:delve"], ["pattern:TAPESTRY"], []]
    assert s["score"].to_list() == [1.0, 1.0, 1.0]  # patterns never move the score
    with pytest.raises(ValueError, match=r"patterns\[0\]: no 'pattern'"):
        rt.Rubric.from_rubrify({**SPEC, "patterns": [{"id": "x"}]})
