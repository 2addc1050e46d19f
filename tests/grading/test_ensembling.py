"""rt.ensemble on recorded multi-judge verdict tables."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "ok", "weight": 1, "requirement": "x"},
        {"name": "bad", "weight": -1, "requirement": "y"},
        {
            "name": "q",
            "weight": 1,
            "requirement": "z",
            "options": [{"label": str(k), "value": (k - 1) / 4} for k in range(1, 6)],
        },
    ]
)


def _votes() -> pl.DataFrame:
    rows = [
        (1, "ok", "MET", None, "a"),
        (1, "ok", "UNMET", None, "b"),
        (1, "ok", "MET", None, "c"),
        (1, "bad", "MET", None, "a"),
        (1, "bad", "UNMET", None, "b"),
        (1, "bad", None, "timeout", "c"),
        (1, "q", "2", None, "a"),
        (1, "q", "5", None, "b"),
        (1, "q", "4", None, "c"),
        (2, "ok", None, "500", "a"),
        (2, "ok", None, "500", "b"),
        (2, "ok", None, "429", "c"),
    ]
    return pl.DataFrame(rows, schema=["id", "criterion", "verdict", "error", "judge"], orient="row")


def test_majority_median_and_errors() -> None:
    e = rt.ensemble(_votes(), RUBRIC, per_criterion={"q": "median"})
    got = {(r["id"], r["criterion"]): r for r in e.iter_rows(named=True)}
    assert got[(1, "ok")]["verdict"] == "MET"
    # a 1-1 tie on a penalty goes to the score-minimising label (MET subtracts); the errored vote does not vote
    assert got[(1, "bad")]["verdict"] == "MET"
    assert got[(1, "q")]["verdict"] == "4"
    assert got[(2, "ok")]["verdict"] is None and "all 3 judges failed" in got[(2, "ok")]["error"]
    assert e["judge"].unique().to_list() == ["ensemble"]
    assert e["cost_usd"].null_count() == e.height  # recorded votes: usage unknown, not 0
    assert e["id"].to_list() == [1, 1, 1, 2]


def test_weighted_and_judge_subset() -> None:
    v = _votes().filter(pl.col("id") == 1, pl.col("criterion") == "ok")
    w = rt.ensemble(v, RUBRIC, method="weighted", judge_weights={"b": 5.0})
    assert w["verdict"].item() == "UNMET"
    only_b = rt.ensemble(v, RUBRIC, judges=["b"])
    assert only_b["verdict"].item() == "UNMET"
    both = rt.ensemble(v, RUBRIC, keep_votes=True)
    assert both.height == 4 and both["judge"].to_list()[-1] == "ensemble"
    with pytest.raises(ValueError, match="not in the table"):
        rt.ensemble(v, RUBRIC, judge_weights={"zzz": 1.0})
    with pytest.raises(ValueError, match="method"):
        rt.ensemble(v, RUBRIC, method="vote")


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True])
def test_ensemble_judge_weights_are_refused_as_judge_weights_are(bad) -> None:
    """Before: 0, -1, NaN, inf and True were accepted (NaN and inf turned verdicts into MET)."""
    v = pl.DataFrame(
        {"id": [1, 1], "criterion": "c", "judge": ["a", "b"], "verdict": ["MET", "UNMET"], "value": [1.0, 0.0]}
    )
    rubric = rt.Rubric.from_dict([{"name": "c", "requirement": "r"}])
    with pytest.raises(ValueError, match=r"judge_weights\['a'\]: weight must be"):
        rt.ensemble(v, rubric, method="weighted", judge_weights={"a": bad, "b": 1.0})


def test_a_grade_table_s_own_ensemble_rows_do_not_vote_again() -> None:
    """Before: re-aggregating a grade(model=[...]) table counted its ensemble rows as one more judge
    ('majority of 4 judges' for three)."""
    v = pl.DataFrame(
        {
            "id": [1] * 4,
            "criterion": "a",
            "verdict": ["MET", "MET", "UNMET", "MET"],
            "judge": ["x", "y", "z", "ensemble"],
            "weight": 1.0,
        }
    )
    out = rt.ensemble(v, method="majority")
    assert out["explanation"].item().startswith("majority of 3 judges")
    shares = {d["label"]: d["prob"] for d in out["distribution"].item()}
    assert shares["MET"] == pytest.approx(2 / 3)
