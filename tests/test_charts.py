"""Charts: assert on the specs (encodings, data, titles) and save each to PNG offline."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

alt = pytest.importorskip("altair")


def _data(spec: dict) -> list[dict]:
    """The rows embedded in a chart spec (inline or consolidated into ``datasets``)."""
    if "datasets" in spec:
        return _data(spec)
    return spec["data"]["values"]


@pytest.fixture(scope="module")
def support():
    d = rt.datasets.load("demo_support")
    return d, rt.agreement(d.verdicts, d.human, d.rubric, bootstrap=200, seed=0)


def test_forest_plot_spec(support) -> None:
    _, table = support
    spec = rt.charts.forest(table, metric="cohen_kappa").to_dict()
    rule, point = spec["layer"]
    assert rule["mark"]["type"] == "rule" and rule["encoding"]["x2"]["field"] == "ci_high"
    assert point["encoding"]["x"]["field"] == "value"
    assert {r["criterion"] for r in _data(spec)} == set(table["criterion"].unique()) - {"__score__"}
    faceted = rt.charts.forest(table, metric=["accuracy", "cohen_kappa"]).to_dict()
    assert faceted["facet"]["column"]["field"] == "metric"
    with pytest.raises(ValueError, match="not in the table"):
        rt.charts.forest(table, metric="nope")


def test_confusion_heatmap_counts(support) -> None:
    d, _ = support
    chart = rt.charts.confusion(d.verdicts, d.human, d.rubric, criterion="polite")
    spec = chart.to_dict()
    values = _data(spec)
    pairs = d.human.filter(pl.col("criterion") == "polite").join(d.verdicts, on=["id", "criterion"])
    assert sum(r["count"] for r in values) == pairs.height
    met_met = next(r for r in values if r["human"] == "MET" and r["judge"] == "MET")
    assert met_met["count"] == pairs.filter((pl.col("label") == "MET") & (pl.col("verdict") == "MET")).height
    assert "polite" in spec["title"]


def test_score_distribution_annotates_distances(support) -> None:
    d, table = support
    spec = rt.charts.score_distributions(d.verdicts, d.human, d.rubric).to_dict()
    w = table.filter((pl.col("criterion") == "__score__") & (pl.col("metric") == "wasserstein"))["value"].item()
    assert f"Wasserstein {w:.3f}" in spec["title"]
    values = _data(spec)
    assert abs(sum(r["share"] for r in values if r["who"] == "judge") - 1) < 1e-9


def test_charts_stay_small_on_big_tables() -> None:
    d = rt.datasets.load("hanna")
    v = d.verdicts.filter(pl.col("judge") == "ChatGPT/p1")
    spec = rt.charts.confusion(v, d.human).to_dict()  # 19k pairs -> at most 6 x 25 cells
    assert len(_data(spec)) <= 150


def test_each_chart_saves_to_png(support, tmp_path) -> None:
    pytest.importorskip("vl_convert")
    d, table = support
    for name, chart in {
        "forest": rt.charts.forest(table, metric="cohen_kappa"),
        "confusion": rt.charts.confusion(d.verdicts, d.human, d.rubric),
        "scores": rt.charts.score_distributions(d.verdicts, d.human, d.rubric),
    }.items():
        path = tmp_path / f"{name}.png"
        chart.save(str(path))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
