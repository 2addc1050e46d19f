"""Every chart that draws intervals says the level they were computed at, read from the table."""

from __future__ import annotations

import json

import polars as pl
import pytest

import rubrictools as rt

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "Says hello"}, {"name": "b", "requirement": "Is brief"}])
N = 40
V = pl.DataFrame(
    {
        "id": [i for i in range(N) for _ in "ab"],
        "criterion": ["a", "b"] * N,
        "verdict": [("MET" if (i * 7 + k) % 3 else "UNMET") for i in range(N) for k in range(2)],
    }
).with_columns(value=(pl.col("verdict") == "MET").cast(pl.Float64), judge=pl.lit("j"), error=pl.lit(None, pl.String))
H = V.select("id", "criterion", label=pl.when(pl.col("id") % 5 == 0).then(pl.lit("UNMET")).otherwise(pl.col("verdict")))


def text(chart) -> str:
    return json.dumps(chart.to_dict())


@pytest.mark.parametrize("ci", [0.8, 0.9, 0.99])
def test_agreement_forest_and_met_rates_print_the_level_of_the_table(ci: float) -> None:
    t = rt.agreement(V, H, RUBRIC, n_resamples=200, ci=ci)
    assert t["ci_level"].unique().to_list() == [ci]
    shown = text(rt.charts.forest(t, metric="cohen_kappa"))
    assert f"{ci:.0%} CI" in shown and "95%" not in shown
    shown = text(rt.charts.met_rates(V, H, RUBRIC, n_resamples=50, ci=ci))
    assert f"MET rate ({ci:.0%} CI)" in shown and "95%" not in shown


def test_a_table_without_its_level_claims_none() -> None:
    t = rt.agreement(V, H, RUBRIC, n_resamples=50).drop("ci_level")
    shown = text(rt.charts.forest(t, metric="cohen_kappa"))
    assert "95%" not in shown and "(CI" in shown


def test_leaderboard_position_bias_and_run_comparison_print_the_level() -> None:
    prefs = pl.DataFrame(
        {
            "id": list(range(60)),
            "system_a": ["x"] * 30 + ["y"] * 30,
            "system_b": ["y"] * 30 + ["z"] * 30,
            "preferred": (["A", "B", "A"] * 20),
            "criterion": "overall",
            "judge": "j",
        }
    )
    board = rt.rank_systems(prefs, n_resamples=100, ci=0.8)
    assert "rating (80% cluster-bootstrap interval)" in text(rt.charts.leaderboard(board))
    other = V.with_columns(value=pl.lit(1.0), verdict=pl.lit("MET"))
    cmp = rt.compare_runs(V, other, rubric=RUBRIC, n_resamples=100, ci=0.9)
    assert "mean and 90% interval" in text(rt.charts.run_comparison(cmp))
