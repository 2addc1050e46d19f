"""Pairwise charts: leaderboard, win-rate matrix, position bias (specs; pictures checked by eye)."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt


@pytest.fixture
def prefs():
    rows = [
        (f"p{k}", a, b, v)
        for k, (a, b, v) in enumerate(
            [
                ("x", "y", 1.0),
                ("x", "y", 1.0),
                ("y", "x", 0.0),
                ("x", "z", 1.0),
                ("z", "x", 1.0),
                ("y", "z", 0.5),
                ("y", "z", 1.0),
                ("z", "y", 0.0),
                ("x", "y", 0.0),
                ("z", "x", 0.0),
            ]
            * 3
        )
    ]
    return pl.DataFrame(rows, schema=["id", "system_a", "system_b", "value"], orient="row")


def test_leaderboard_is_sorted_best_first_with_rank_labels(prefs):
    board = rt.rank_systems(prefs, n_resamples=100)
    spec = rt.charts.leaderboard(board).to_dict()
    mean_line, interval = spec["layer"][0], spec["layer"][1]
    assert interval["encoding"]["y"]["sort"] == board["system"].to_list()
    rows = [r for data in spec.get("datasets", {}).values() for r in data]
    rows += [r for layer in spec["layer"] for r in layer.get("data", {}).get("values", [])]
    ranks = {d["system"]: d["ranks"] for d in rows if "ranks" in d}
    assert ranks[board["system"][0]].startswith("#1")
    # the average system: a dashed line at the ratings' mean (1,000: rank_systems' anchor), said in the subtitle
    assert mean_line["mark"]["strokeDash"] and spec["title"]["subtitle"] == "dashed: the mean rating, 1,000"


def test_win_matrix_orders_by_mean_win_rate_and_needs_one_criterion(prefs):
    w = rt.win_rates(prefs, n_resamples=50)
    spec = rt.charts.win_matrix(w).to_dict()
    order = spec["layer"][0]["encoding"]["y"]["sort"]
    assert order[0] == "x" and len(order) == 3
    two = pl.concat([w.with_columns(pl.lit(c).alias("criterion")) for c in ("a", "b")])
    with pytest.raises(ValueError, match="several criterions"):
        rt.charts.win_matrix(two)
    assert rt.charts.win_matrix(two, criterion="a").to_dict()["layer"][1]["mark"]["type"] == "text"


def test_position_bias_chart_has_two_panels_and_reference_lines():
    d = rt.datasets.load("llmbar")
    bias = rt.position_bias(d.tables["preferences"], by=("subset", "judge"), on_error="as_answer", n_resamples=50)
    spec = rt.charts.position_bias(bias).to_dict()
    assert len(spec["hconcat"]) == 2
    refs = [lay for p in spec["hconcat"] for lay in p["layer"] if lay["mark"].get("strokeDash")]
    assert len(refs) == 2
    with pytest.raises(ValueError, match="missing column"):
        rt.charts.position_bias(pl.DataFrame({"x": [1]}))


def test_position_bias_says_a_judge_shared_by_every_row_once_in_the_title():
    """Before: every row label repeated the one judge ('openai/scripted-stand-in · right')."""
    d = rt.datasets.load("llmbar")
    prefs = d.tables["preferences"].filter(pl.col("judge") == pl.col("judge").first())
    bias = rt.position_bias(prefs, by=("subset", "judge"), on_error="as_answer", n_resamples=50)
    spec = rt.charts.position_bias(bias).to_dict()
    judge = prefs["judge"][0]
    rows = {v["group"] for v in spec["datasets"][next(iter(spec["datasets"]))]} if "datasets" in spec else set()
    rows = rows or {v["group"] for v in spec["hconcat"][0]["layer"][0]["data"]["values"]}
    assert rows == set(bias["subset"].to_list()) and judge not in " ".join(rows)
    assert spec["title"].startswith(f"Position bias of {judge} (")
    assert "dashed: never flips" in str(spec["hconcat"][0])


def test_position_bias_with_every_answer_a_tie_says_so_in_a_row_aligned_with_the_other_panel():
    prefs = pl.DataFrame(
        {"id": range(6), "judge": ["x"] * 3 + ["y"] * 3, "preferred_ab": ["tie"] * 3 + ["A", "B", "A"],
         "preferred_ba": ["tie"] * 3 + ["B", "A", "B"]}
    )  # fmt: skip
    bias = rt.position_bias(prefs, n_resamples=50)
    x = bias.filter(pl.col("judge") == "x").row(0, named=True)
    assert (x["decisive"], x["first_win_rate"], x["first_ci_low"], x["first_ci_high"]) == (0, None, None, None)
    spec = rt.charts.position_bias(bias).to_dict()
    left, right = (panel["layer"] for panel in spec["hconcat"])
    assert left[0]["encoding"]["y"]["scale"]["domain"] == right[0]["encoding"]["y"]["scale"]["domain"] == ["x", "y"]
    texts = [layer for layer in right if layer["mark"]["type"] == "text"]
    assert [t["encoding"]["text"]["value"] for t in texts] == ["no decisive answer (all ties)"]
    assert texts[0]["transform"] == [{"filter": "!isValid(datum.first_win_rate)"}]
