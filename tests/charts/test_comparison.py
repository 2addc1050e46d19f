"""run_comparison: the chart of compare_runs says what changed and how sure, without implying good or bad."""

from __future__ import annotations

import polars as pl

import rubrictools as rt
from rubrictools.comparison import RunComparison

RUB = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])


def _cmp(n_resamples: int) -> RunComparison:
    a = pl.DataFrame({"id": range(8), "criterion": "greets", "verdict": "UNMET", "value": 0.0})
    b = a.with_columns(pl.Series("value", [1.0] * 6 + [0.0] * 2), pl.Series("verdict", ["MET"] * 6 + ["UNMET"] * 2))
    return rt.compare_runs(a, b, rubric=RUB, names=("v1", "v2"), n_resamples=n_resamples)


def _layers(spec: dict) -> list[dict]:
    """Every layer, of a single panel or of the overall-score and criteria panels."""
    return [layer for panel in spec.get("vconcat", [spec]) for layer in panel["layer"]]


def _colour(spec: dict) -> dict:
    return next(layer["encoding"]["color"] for layer in _layers(spec) if "color" in layer.get("encoding", {}))


def test_the_overall_score_and_the_criteria_get_their_own_axes() -> None:
    """Before: the overall score's change (0-1) and the criteria's MET-share changes shared one axis,
    so a criterion's bar read as several times the overall effect (review round 12)."""
    spec = rt.charts.run_comparison(_cmp(200)).to_dict()
    overall, criteria = spec["vconcat"]
    titles = [p["layer"][1]["encoding"]["x"]["title"][0] for p in (overall, criteria)]
    assert titles == ["change in the overall score, v2 \u2212 v1 (0-1 scale)",
                      "change in each criterion's MET share, v2 \u2212 v1 (percentage points)"]  # fmt: skip
    rows = [[r["criterion"] for r in p["layer"][1]["data"]["values"]] for p in (overall, criteria)]
    assert rows == [["overall score"], ["greets"]]
    # the criteria's axis prints percentage points, as the labels beside the bars do (before: fractions)
    axes = [p["layer"][1]["encoding"]["x"]["axis"] for p in (overall, criteria)]
    assert "labelExpr" not in axes[0] and "' pp'" in axes[1]["labelExpr"]


def test_the_legend_names_only_what_is_drawn_in_neutral_colours() -> None:
    spec = rt.charts.run_comparison(_cmp(500)).to_dict()
    colour = _colour(spec)
    assert colour["scale"]["domain"] == ["interval excludes 0"]  # no legend entry for absent readings
    assert "#d62728" not in colour["scale"]["range"]  # red would read as "worse"
    assert spec["title"] == "v2 against v1: 8 paired submissions, 6 verdict flips"
    assert "v2 \u2212 v1" in spec["vconcat"][1]["layer"][1]["encoding"]["x"]["title"][0]
    assert _colour(rt.charts.run_comparison(_cmp(0)).to_dict())["scale"]["domain"] == ["no interval"]


def test_a_penalty_is_labelled_and_its_rise_said_to_lower_the_score() -> None:
    rub = rt.Rubric.from_dict(
        [{"name": "greets", "requirement": "Says hello"}, {"name": "rude", "requirement": "Is rude", "weight": -2}]
    )
    greets, rude = [1.0] * 8, [0.0] * 8
    a = pl.DataFrame({"id": [*range(8)] * 2, "criterion": ["greets"] * 8 + ["rude"] * 8, "value": greets + rude})
    a = a.with_columns(pl.when(pl.col("value") == 1).then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("verdict"))
    rise = pl.Series("value", greets + [1.0] * 6 + [0.0] * 2)
    b = a.with_columns(rise, pl.when(rise == 1).then(pl.lit("MET")).otherwise(pl.lit("UNMET")).alias("verdict"))
    cmp = rt.compare_runs(a, b, rubric=rub, n_resamples=200, seed=0)
    assert cmp.summary.select("criterion", "penalty").rows() == [
        ("overall score", None),
        ("greets", False),
        ("rude", True),
    ]
    layers = _layers(rt.charts.run_comparison(cmp).to_dict())
    rows = {r["criterion"]: r for layer in layers for r in layer.get("data", {}).get("values", []) if "row" in r}
    assert rows["rude"]["row"] == "rude (penalty)" and rows["rude"]["effect"] == "  (lowers the score)"
    assert rows["greets"]["row"] == "greets" and rows["greets"]["effect"] == ""
    assert rows["overall score"]["change"] < 0  # the penalty's rise is the score's fall


def test_change_labels_sit_in_a_column_past_every_interval_and_zero() -> None:
    """Before: each label started at its bar's end, so labels crossed the zero line and ran
    past the frame (round 3). Now the domain holds every interval and 0, and the labels sit at
    its right end. A criterion's change prints in percentage points as compare_runs' tables do
    (7/80: +8.75 pp; round 5 found the chart at +0.0875 beside a table in pp), the overall
    score's to four decimals on its 0-1 scale."""
    rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}])
    a = pl.DataFrame({"id": range(80), "criterion": "greets", "verdict": "UNMET", "value": 0.0})
    b = a.with_columns(pl.when(pl.col("id") < 7).then(1.0).otherwise(0.0).alias("value"))
    spec = rt.charts.run_comparison(rt.compare_runs(a, b, rubric=rub, n_resamples=200, seed=0)).to_dict()
    spec = spec["vconcat"][1]  # the criteria's panel
    lo, hi = spec["layer"][1]["encoding"]["x"]["scale"]["domain"]
    rows = [r for r in spec["layer"][1]["data"]["values"]] if "data" in spec["layer"][1] else spec["data"]["values"]
    assert lo < 0 < hi and all(lo <= r["lo"] and r["hi"] <= hi for r in rows)
    text = spec["layer"][3]
    assert text["encoding"]["x"] == {"datum": hi}
    expr = text["transform"][0]["calculate"]
    assert "format(100 * datum.change, '.2f') + ' pp'" in expr and "format(datum.change, '.4f')" in expr


def test_a_criterion_no_verdict_of_which_moved_is_said_so_not_drawn_as_noise() -> None:
    """Before: a criterion whose verdicts all stayed had the interval [0, 0] and p = 1, drawn as
    "interval includes 0" like a change lost in the noise (review round 23)."""
    rub = rt.Rubric.from_dict([{"name": "greets", "requirement": "Says hello"}, {"name": "polite", "requirement": "x"}])
    a = pl.DataFrame({"id": [*range(8)] * 2, "criterion": ["greets"] * 8 + ["polite"] * 8,
                      "verdict": "UNMET", "value": 0.0})  # fmt: skip
    moved = (pl.col("criterion") == "greets") & (pl.col("id") < 6)
    b = a.with_columns(pl.when(moved).then(pl.lit("MET")).otherwise("verdict").alias("verdict"),
                       pl.when(moved).then(1.0).otherwise("value").alias("value"))  # fmt: skip
    spec = rt.charts.run_comparison(rt.compare_runs(a, b, rubric=rub, n_resamples=200)).to_dict()
    readings = {r["criterion"]: r["reading"] for r in spec["vconcat"][1]["layer"][1]["data"]["values"]}
    assert readings == {"greets": "interval excludes 0", "polite": "no verdict changed"}
