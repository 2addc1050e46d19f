"""rt.charts.before_after: a dumbbell per group, in the table's order."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt
from tests.vega import walk

pytest.importorskip("altair")


def test_before_after_keeps_order_and_computes_the_change() -> None:
    t = pl.DataFrame({"criterion": ["zeta", "alpha"], "metric": "kappa", "before": [0.2, 0.5], "now": [0.4, 0.5]})
    spec = rt.charts.before_after(t).to_dict()
    rows = spec["datasets"][next(iter(spec["datasets"]))] if "datasets" in spec else spec["data"]["values"]
    assert [r["group"] for r in rows] == ["zeta", "alpha"]
    assert [r["change"] for r in rows] == pytest.approx([0.2, 0.0])
    assert spec["layer"][0]["encoding"]["y"]["sort"] == ["zeta", "alpha"]  # not alphabetical
    marks = {layer["encoding"]["x"]["field"]: layer["mark"] for layer in spec["layer"][1:3]}
    assert not marks["before"].get("filled", False) and marks["after"]["filled"]  # hollow before, filled after
    # the ring is drawn last and larger, so a row that did not move still shows both
    assert spec["layer"][2]["encoding"]["x"]["field"] == "before" and marks["before"]["size"] > marks["after"]["size"]


def test_before_after_names_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"before_after: missing column\(s\) \['now'\]"):
        rt.charts.before_after(pl.DataFrame({"criterion": ["a"], "before": [0.1]}))


def test_a_metric_is_named_in_words_with_its_chance_line_or_rate_axis() -> None:
    """Before: the adjudication chart's title and axis said 'cohen_kappa' and nothing marked chance."""
    t = pl.DataFrame({"criterion": ["a", "b"], "before": [0.5, 0.7], "now": [0.6, 0.7]})
    spec = rt.charts.before_after(t, metric="cohen_kappa").to_dict()
    assert spec["title"].startswith("Cohen's kappa") and "cohen_kappa" not in str(spec)
    rules = [n for n in walk(spec) if n.get("mark", {}).get("strokeDash")]
    assert rules and rules[0]["data"]["values"][0]["x"] == 0.0  # the chance line
    x = next(n["encoding"]["x"] for n in walk(spec) if n.get("encoding", {}).get("x", {}).get("scale"))
    assert x["scale"]["domainMin"] == 0.0
    rate = rt.charts.before_after(t, metric="accuracy").to_dict()
    x = next(n["encoding"]["x"] for n in walk(rate) if n.get("encoding", {}).get("x", {}).get("scale"))
    assert x["scale"]["domain"] == [0, 1] and x["axis"]["format"] == "%"


def test_the_chance_line_is_not_hidden_under_the_axis_line() -> None:
    """Before: a kappa axis starts at its dashed chance line (0), and the y-axis line was drawn over it."""
    t = pl.DataFrame({"criterion": ["a", "b"], "before": [0.2, 0.7], "now": [0.6, 0.7]})
    kappa = rt.charts.before_after(t, metric="cohen_kappa").to_dict()
    ys = [layer["encoding"].get("y", {}) for layer in kappa["layer"]]
    y_axes = [y.get("axis", {}) for y in ys if "field" in y]
    assert y_axes and all(axis.get("domain") is False for axis in y_axes)
    plain = rt.charts.before_after(t, metric="mae").to_dict()  # no chance line: the axis line stays
    assert all(layer["encoding"]["y"].get("axis", {}).get("domain") is not False
               for layer in plain["layer"] if "y" in layer.get("encoding", {}))  # fmt: skip
