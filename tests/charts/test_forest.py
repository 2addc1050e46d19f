"""forest: reference lines where chance lies."""

from __future__ import annotations

import polars as pl

import rubrictools as rt


def test_a_forest_of_mixed_metrics_draws_the_chance_line_only_where_zero_is_chance() -> None:
    t = pl.DataFrame(
        {
            "criterion": ["a", "a"],
            "metric": ["rmse", "pearson"],
            "value": [0.7, 0.2],
            "ci_low": [0.6, 0.01],
            "ci_high": [0.8, 0.35],
        }
    )
    spec = rt.charts.forest(t).to_dict()
    layers = spec["spec"]["layer"]
    ref = layers[0]
    assert ref["mark"]["strokeDash"] and ref["encoding"]["x"] == {"field": "zero", "type": "quantitative"}
    assert ref["transform"][0] == {"filter": {"field": "metric", "oneOf": ["Pearson's r"]}}  # not in the RMSE panel
    assert "chance" not in layers[1]["encoding"]["x"]["title"]  # one axis title for both panels: no line in RMSE's
    assert spec["title"]["subtitle"] == "dashed line: chance (0), in the Pearson's r panel"
    assert spec["resolve"]["scale"]["x"] == "independent"  # an error in points does not share an agreement axis
    both_agreement = t.with_columns(pl.Series("metric", ["spearman", "pearson"]))
    assert rt.charts.forest(both_agreement).to_dict()["resolve"]["scale"]["x"] == "shared"
