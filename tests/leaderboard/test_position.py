"""Position bias, and LLMBar's published positional agreement reproduced from its judgments."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt


def test_definitions_on_a_hand_made_table():
    prefs = pl.DataFrame(
        {
            "id": [1, 2, 3, 4, 5],
            "preferred_ab": ["A", "A", "B", "tie", None],
            "preferred_ba": ["A", "B", "A", "tie", "A"],
        }
    )
    b = rt.position_bias(prefs, n_resamples=100).row(0, named=True)
    assert b["pairs"] == 4  # the pair with a missing answer is left out
    assert b["positional_agreement"] == pytest.approx(2 / 4) and b["inconsistent"] == pytest.approx(0.5)
    # decisive answers: A,A (ab: A first wins twice, B once) and A,B,A (ba: B first wins once)
    assert b["decisive"] == 6 and b["first_win_rate"] == pytest.approx(3 / 6)
    kept = rt.position_bias(prefs, on_error="as_answer", n_resamples=10).row(0, named=True)
    assert kept["pairs"] == 5 and kept["positional_agreement"] == pytest.approx(2 / 5)


def test_one_order_only_is_refused():
    prefs = pl.DataFrame(
        {"id": [1], "preferred_ab": ["A"], "preferred_ba": [None]}, schema_overrides={"preferred_ba": pl.String}
    )
    with pytest.raises(ValueError, match="swap=True"):
        rt.position_bias(prefs)


def test_llmbar_published_positional_agreement_per_subset():
    d = rt.datasets.load("llmbar")
    bias = rt.position_bias(d.tables["preferences"], by=("subset", "judge"), on_error="as_answer", n_resamples=200)
    published = d.tables["published"].select("subset", "judge", "equal")
    both = bias.join(published, on=["subset", "judge"])
    assert both.height == 16
    assert (both["positional_agreement"] - both["equal"]).abs().max() < 1e-12
    assert (both["agreement_ci_low"] <= both["positional_agreement"]).all()
    # FairEval is where GPT-4 is least consistent, and it favours the first answer there
    fair = both.filter(pl.col("subset") == "FairEval").sort("judge")
    assert fair["positional_agreement"].max() < 0.75 and fair["first_win_rate"].min() > 0.6


def test_by_takes_one_column_name_as_the_other_tables_do_and_refuses_unknown_names():
    """Before: by="criterion" was read letter by letter, found no column 'c', 'r', ... and pooled
    every criterion into one row without a word; a typo pooled too."""
    prefs = pl.DataFrame(
        {
            "id": [1, 2, 1, 2],
            "criterion": ["a", "a", "b", "b"],
            "preferred_ab": ["A", "A", "B", "A"],
            "preferred_ba": ["A", "B", "B", "B"],
        }
    )
    per = rt.position_bias(prefs, by="criterion", n_resamples=20)
    assert per["criterion"].to_list() == ["a", "b"]
    assert rt.position_bias(prefs, by=None, n_resamples=20).height == 1
    with pytest.raises(ValueError, match=r"by: \['criteria'\] are not columns of prefs"):
        rt.position_bias(prefs, by=("criteria",), n_resamples=20)


def test_answers_other_than_a_b_or_tie_are_refused():
    """Before: 'a' or 'first' gave NaN and a meaningless agreement with no error."""
    prefs = pl.DataFrame({"id": [1, 2], "preferred_ab": ["A", "first"], "preferred_ba": ["A", "B"]})
    with pytest.raises(ValueError, match=r"preferred_ab holds \['first'\]: each order's answer must be 'A', 'B' or"):
        rt.position_bias(prefs, n_resamples=20)


def test_no_resamples_gives_point_estimates_as_win_rates_does() -> None:
    """Before: position_bias(n_resamples=0) was refused while win_rates(n_resamples=0) is accepted."""
    prefs = pl.DataFrame(
        {"id": [1, 2, 3, 4], "preferred_ab": ["A", "A", "B", "A"], "preferred_ba": ["B", "A", "A", "B"]}
    )
    point = rt.position_bias(prefs, n_resamples=0)
    full = rt.position_bias(prefs, n_resamples=200)
    assert point.select("positional_agreement", "first_win_rate").equals(
        full.select("positional_agreement", "first_win_rate")
    )
    assert point.select("agreement_ci_low", "first_ci_high").null_count().sum_horizontal().item() == 2
    assert rt.charts.position_bias(point).to_dict()["title"] == "Position bias (no interval)"


def test_position_bias_edges_say_what_they_cannot_measure() -> None:
    prefs = pl.DataFrame({"id": [1, 2, 3], "judge": ["x", "y", "y"], "preferred_ab": ["A", "A", "B"],
                          "preferred_ba": ["A", "B", "B"]})  # fmt: skip
    t = rt.position_bias(prefs, n_resamples=50)
    one = t.filter(pl.col("judge") == "x").row(0, named=True)  # a single prompt: no spread to resample
    assert (one["agreement_ci_low"], one["agreement_ci_high"], one["first_ci_low"]) == (None, None, None)
    assert t.filter(pl.col("judge") == "y")["agreement_ci_low"].is_not_null().all()
    with pytest.warns(UserWarning, match=r"null values in the grouping column\(s\) \{'judge': 1\}"):
        unnamed = pl.when(pl.col("id") == 1).then(None).otherwise(pl.col("judge")).alias("judge")
        rt.position_bias(prefs.with_columns(unnamed), n_resamples=10)
    with pytest.raises(ValueError, match="prefs is empty"):
        rt.position_bias(prefs.head(0), n_resamples=10)
