"""forest: reference lines where chance lies."""

from __future__ import annotations

import json

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
    assert spec["title"]["subtitle"] == "dashed line at 0: no relation, in the Pearson's r panel"
    assert spec["resolve"]["scale"]["x"] == "independent"  # an error in points does not share an agreement axis
    both_agreement = t.with_columns(pl.Series("metric", ["spearman", "pearson"]))
    assert rt.charts.forest(both_agreement).to_dict()["resolve"]["scale"]["x"] == "shared"


def test_no_tick_label_is_dropped_for_overlap_so_zero_stays_labelled() -> None:
    """Before: two 260 px panels of ten ticks each (-0.05 to 0.40) lost every other label to Vega's
    overlap rule, 0.00 beside the chance line among them (notebook 02)."""
    import re

    import pytest

    vl_convert = pytest.importorskip("vl_convert")
    t = pl.DataFrame(
        {
            "criterion": ["coherence", "engagement", "empathy"] * 2,
            "metric": ["kappa_quadratic"] * 3 + ["spearman"] * 3,
            "value": [0.14, 0.16, 0.12, 0.26, 0.29, 0.25],
            "ci_low": [0.02, 0.0, 0.05, 0.1, 0.13, 0.09],
            "ci_high": [0.3, 0.32, 0.28, 0.38, 0.33, 0.37],
        }
    )
    svg = vl_convert.vegalite_to_svg(rt.charts.forest(t).to_dict())
    ticks = re.findall(r"<text([^>]*)>(\u2212?\d+(?:\.\d+)?)</text>", svg)
    hidden = [label for attrs, label in ticks if 'opacity="0"' in attrs]
    shown = [label for attrs, label in ticks if 'opacity="0"' not in attrs]
    assert ticks and not hidden, hidden
    assert shown.count("0.0") + shown.count("0.00") + shown.count("0") == 2  # one per panel


def test_the_zero_line_of_a_correlation_says_no_relation_not_chance() -> None:
    rows = [{"criterion": "c", "metric": m, "value": 0.3, "ci_low": 0.2, "ci_high": 0.4} for m in ("spearman",)]
    only = json.dumps(rt.charts.forest(pl.DataFrame(rows)).to_dict())
    assert "dashed: no relation" in only and "dashed: chance" not in only
    mixed = pl.DataFrame([*rows, {**rows[0], "metric": "kappa_quadratic"}])
    both = json.dumps(rt.charts.forest(mixed, metric=["kappa_quadratic", "spearman"]).to_dict())
    assert "dashed line at 0: chance, or no relation for a correlation, in every panel" in both
