"""`rt.judge_kappas`: kappa between every pair of judges, weighted for ordinal criteria."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from rubrictools import metrics as m


def _ordinal() -> rt.Rubric:
    return rt.Rubric.from_dict(
        [
            {"name": c, "requirement": f"{c} (1-5)", "scale": "ordinal",
             "options": [{"label": str(k), "value": (k - 1) / 4} for k in range(1, 6)]}
            for c in ("a", "b")
        ]
    )  # fmt: skip


def _verdicts() -> pl.DataFrame:
    x = ["1", "2", "3", "4", "5", "3"]
    y = ["2", "2", "4", "4", "4", "1"]
    z = ["5", "1", "3", "2", "1", "5"]
    rows = [(i, c, j, lab[i]) for c in ("a", "b") for j, lab in (("x", x), ("y", y), ("z", z)) for i in range(6)]
    return pl.DataFrame(rows, schema=["id", "criterion", "judge", "verdict"], orient="row")


def test_ordinal_criteria_get_quadratic_weights_and_the_pooled_value_is_the_n_weighted_mean():
    v, rubric = _verdicts(), _ordinal()
    t = rt.judge_kappas(v, rubric)
    assert set(t["weights"]) == {"quadratic"} and t.height == 6  # 3 judges: 6 ordered pairs
    xy = t.filter(pl.col("judge_a") == "x", pl.col("judge_b") == "y").row(0, named=True)
    labels = [str(k) for k in range(1, 6)]
    want = m.cohen_kappa(v.filter(judge="x")["verdict"][:6], v.filter(judge="y")["verdict"][:6], labels=labels,
                         weights="quadratic")  # fmt: skip
    assert xy["kappa"] == pytest.approx(float(want)) and xy["n"] == 12
    plain = rt.judge_kappas(v, rubric, weights=None).filter(pl.col("judge_a") == "x", pl.col("judge_b") == "y")
    assert plain["kappa"].item() == pytest.approx(float(m.cohen_kappa(v["verdict"][:6], v["verdict"][6:12])))
    assert plain["weights"].item() == "none"


def test_without_a_rubric_or_for_a_binary_rubric_kappa_is_unweighted():
    v = _verdicts()
    assert set(rt.judge_kappas(v)["weights"]) == {"none"}


def test_bad_inputs_are_named():
    v = _verdicts()
    with pytest.raises(ValueError, match="weights must be"):
        rt.judge_kappas(v, _ordinal(), weights="cubic")  # type: ignore[arg-type]  # reason: the bad value under test
    with pytest.raises(ValueError, match="criterion='c' is not in the verdicts"):
        rt.judge_kappas(v, criterion="c")
    with pytest.raises(ValueError, match="needs a 'judge' column"):
        rt.judge_kappas(v.drop("judge"))
    with pytest.raises(ValueError, match="at least two judges"):
        rt.judge_kappas(v.filter(judge="x"))


def test_the_chart_names_the_weighting_it_draws():
    chart = rt.charts.judge_agreement(_verdicts(), _ordinal()).to_dict()
    assert "quadratic-weighted kappa" in str(chart["title"])
    assert "Cohen's kappa" in str(rt.charts.judge_agreement(_verdicts()).to_dict()["title"])
