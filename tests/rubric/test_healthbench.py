"""HealthBench scoring against hand computations of its published formulas (simple-evals
``healthbench_eval.py``): unclamped example scores, clipped means, tag scores, bootstrap std."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

# Example A: +10 met, +5 unmet, -8 met           -> (10 - 8) / 15       =  2/15
# Example B: +3 unmet, -10 met                   -> -10 / 3              = -10/3 (negative, unclamped)
# Example C: +4 met, +6 met                      -> 10 / 10              =  1
RUBRICS = {
    "A": [
        {"criterion": "Gives the dose", "points": 10, "tags": ["axis:accuracy", "level:example"]},
        {"criterion": "Mentions side effects", "points": 5, "tags": ["axis:completeness"]},
        {"criterion": "Gives a wrong interaction", "points": -8, "tags": ["axis:accuracy", "theme:harm"]},
    ],
    "B": [
        {"criterion": "Asks for age", "points": 3, "tags": ["axis:context_seeking"]},
        {"criterion": "Suggests stopping medication", "points": -10, "tags": ["theme:harm"]},
    ],
    "C": [
        {"criterion": "Is concise", "points": 4, "tags": ["axis:communication"]},
        {"criterion": "Advises a doctor", "points": 6, "tags": ["axis:accuracy"]},
    ],
}
MET = {"A": ["MET", "UNMET", "MET"], "B": ["UNMET", "MET"], "C": ["MET", "MET"]}


def frames(verdicts: dict[str, list[str]] = MET) -> tuple[pl.DataFrame, pl.DataFrame]:
    ex = pl.DataFrame(
        {
            "id": list(RUBRICS),
            "rubrics": list(RUBRICS.values()),
            "example_tags": [["theme:emergency"], [], ["theme:emergency"]],
            "system": ["m1", "m1", "m2"],
        }
    )
    rows = [
        {"id": i, "criterion": f"c{k + 1}", "verdict": vd, "weight": float(RUBRICS[i][k]["points"])}
        for i, vs in verdicts.items()
        for k, vd in enumerate(vs)
    ]
    return pl.DataFrame(rows), ex


def test_example_scores_are_unclamped_and_the_mean_is_clipped() -> None:
    v, ex = frames()
    hb = rt.healthbench_score(v, ex, example_tags_column="example_tags", n_resamples=0)
    scores = dict(hb.examples.select("id", "score").rows())
    assert scores == pytest.approx({"A": 2 / 15, "B": -10 / 3, "C": 1.0})
    assert hb.examples["possible"].to_list() == [15.0, 3.0, 10.0]
    summary = {m: (s, n) for m, s, _, n, _ in hb.summary.rows()}
    assert summary["overall_score"] == (0.0, 3)  # mean (2/15 - 10/3 + 1) / 3 = -0.733 -> clipped to 0
    unclipped = dict(hb.summary.select("metric", "unclipped").rows())
    assert unclipped["overall_score"] == pytest.approx((2 / 15 - 10 / 3 + 1) / 3)  # the mean the 0 hides
    assert unclipped["axis:completeness"] == 0.0  # a true 0, not a clipped one
    assert summary["theme:emergency"][0] == pytest.approx((2 / 15 + 1) / 2)  # example tag: A and C
    assert summary["axis:accuracy"] == (pytest.approx(((10 - 8) / 10 + 6 / 6) / 2), 2)
    assert summary["axis:completeness"] == (0.0, 1)
    assert summary["axis:context_seeking"] == (0.0, 1)
    assert "theme:harm" not in summary  # only negative items carry it: no score, as in HealthBench
    assert hb.summary["metric"][0] == "overall_score"


def test_tag_scores_per_example() -> None:
    v, ex = frames()
    hb = rt.healthbench_score(v, ex, n_resamples=0)
    got = {(i, t): s for i, t, s in hb.tags.rows()}
    assert got == pytest.approx(
        {
            ("A", "axis:accuracy"): 0.2,
            ("A", "level:example"): 1.0,
            ("A", "axis:completeness"): 0.0,
            ("B", "axis:context_seeking"): 0.0,
            ("C", "axis:communication"): 1.0,
            ("C", "axis:accuracy"): 1.0,
        }
    )


def test_a_positive_mean_is_not_clipped_and_groups_are_scored_apart() -> None:
    v, ex = frames({"A": ["MET", "MET", "UNMET"], "B": ["MET", "UNMET"], "C": ["UNMET", "MET"]})
    hb = rt.healthbench_score(v, ex, by="system", n_resamples=0)
    overall = hb.summary.filter(pl.col("metric") == "overall_score")
    assert overall.select("system", "score", "n").rows() == [("m1", 1.0, 2), ("m2", 0.6, 1)]
    plain = rt.healthbench_score(v, ex, n_resamples=0).summary.row(0)
    assert plain[1] == pytest.approx((1 + 1 + 0.6) / 3)


def test_unassessed_items_exclude_the_example_or_count_as_unmet() -> None:
    v, ex = frames({"A": ["MET", "CANNOT_ASSESS", "UNMET"], "B": ["UNMET", "MET"], "C": ["MET", "MET"]})
    v = v.filter(~((pl.col("id") == "C") & (pl.col("criterion") == "c2")))  # C's second item has no row at all
    hb = rt.healthbench_score(v, ex, n_resamples=0)
    assert hb.examples.select("id", "score", "unassessed").rows() == [("A", None, 1), ("B", -10 / 3, 0), ("C", None, 1)]
    assert hb.summary.row(0)[1:4] == (0.0, pytest.approx(float("nan"), nan_ok=True), 1)
    unmet = rt.healthbench_score(v, ex, cannot_assess="unmet", n_resamples=0)
    assert dict(unmet.examples.select("id", "score").rows()) == pytest.approx({"A": 10 / 15, "B": -10 / 3, "C": 0.4})


def test_errors_and_the_judge_choice() -> None:
    v, ex = frames()
    v2 = pl.concat([v.with_columns(judge=pl.lit("j1")), v.with_columns(judge=pl.lit("j2"), verdict=pl.lit("MET"))])
    with pytest.raises(ValueError, match="pass judge="):
        rt.healthbench_score(v2, ex)
    allmet = rt.healthbench_score(v2, ex, judge="j2", n_resamples=0).examples["score"].to_list()
    assert allmet == pytest.approx([7 / 15, -7 / 3, 1.0])
    with pytest.raises(ValueError, match="rubric_column='rubric' is not a column"):
        rt.healthbench_score(v, ex, rubric_column="rubric")
    with pytest.raises(ValueError, match="cannot_assess must be"):
        rt.healthbench_score(v, ex, cannot_assess="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_resamples must be"):
        rt.healthbench_score(v, ex, n_resamples=-1)
    with pytest.warns(UserWarning, match="1 verdict row"):
        extra = pl.DataFrame({"id": ["Z"], "criterion": ["c1"], "verdict": ["MET"], "weight": [1.0]})
        rt.healthbench_score(pl.concat([v, extra]), ex, n_resamples=0)


def test_one_rubric_for_every_example() -> None:
    rubric = rt.Rubric.from_dict(RUBRICS["C"])
    v = pl.DataFrame({"id": [1, 1, 2, 2], "criterion": ["c1", "c2"] * 2, "verdict": ["MET", "UNMET", "MET", "MET"]})
    hb = rt.healthbench_score(v.with_columns(weight=pl.lit(1.0)), rubric, n_resamples=0)
    assert hb.examples["score"].to_list() == [0.4, 1.0]


def test_bootstrap_std_is_the_spread_of_the_clipped_mean() -> None:
    rng = np.random.default_rng(1)
    met = rng.random(400) < 0.5
    v = pl.DataFrame({"id": range(400), "criterion": "c1", "verdict": np.where(met, "MET", "UNMET"), "weight": 1.0})
    rubric = rt.Rubric.from_dict([{"criterion": "x", "points": 1, "tags": []}])
    s = rt.healthbench_score(v, rubric, seed=3).summary.row(0)
    p = met.mean()
    assert s[1] == pytest.approx(p) and s[2] == pytest.approx(np.sqrt(p * (1 - p) / 400), rel=0.15)
    assert rt.healthbench_score(v, rubric, seed=3).summary.row(0)[2] == s[2]  # seeded: reproducible
    neg = rt.Rubric.from_dict([{"criterion": "x", "points": 1}, {"criterion": "bad", "points": -9}])
    vn = pl.DataFrame({"id": [0, 0, 1, 1], "criterion": ["c1", "c2"] * 2, "verdict": ["MET", "MET", "UNMET", "MET"]})
    sn = rt.healthbench_score(vn.with_columns(weight=pl.lit(1.0)), neg).summary.row(0)
    assert sn[1:4] == (0.0, 0.0, 2)  # every resample's mean is negative: clipped to 0, no spread


def test_healthbench_items_load_as_criteria_with_tags() -> None:
    r = rt.Rubric.from_dict(RUBRICS["A"])
    assert [c.weight for c in r] == [10, 5, -8] and r[2].tags == ("axis:accuracy", "theme:harm")
    assert rt.Rubric.from_dict(r.to_dict()) == r
    with pytest.raises(ValueError, match="field 'points' must be a number"):
        rt.Rubric.from_dict([{"criterion": "x", "points": "5"}])
    with pytest.raises(ValueError, match="duplicate tags"):
        rt.Rubric.from_dict([{"criterion": "x", "points": 5, "tags": ["a", "a"]}])
    with pytest.raises(ValueError, match="tags must be a list of strings"):
        rt.Criterion(requirement="x", tags="axis:a")  # type: ignore[arg-type]
