"""Win rates with cluster-bootstrap intervals, and preferences built from scores."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt


def test_counts_and_both_sides():
    prefs = pl.DataFrame(
        {
            "id": [1, 2, 3, 4, 5],
            "system_a": ["x", "x", "y", "x", "z"],
            "system_b": ["y", "y", "x", "z", "y"],
            "value": [1.0, 0.5, 0.0, None, 1.0],
            "criterion": ["c"] * 5,
        }
    )
    w = rt.win_rates(prefs, n_resamples=200)
    xy = w.filter(pl.col("system") == "x", pl.col("opponent") == "y").row(0, named=True)
    assert (xy["wins"], xy["ties"], xy["losses"], xy["n"]) == (2, 1, 0, 3)  # the error row is left out
    assert xy["win_rate"] == pytest.approx(2.5 / 3)
    yx = w.filter(pl.col("system") == "y", pl.col("opponent") == "x").row(0, named=True)
    assert yx["win_rate"] == pytest.approx(1 - xy["win_rate"]) and yx["losses"] == 2
    assert (w["ci_low"] <= w["win_rate"]).all() and (w["win_rate"] <= w["ci_high"]).all()
    assert "criterion" in w.columns and "judge" not in w.columns


def test_cluster_bootstrap_keeps_a_prompts_comparisons_together():
    # 20 prompts, each with 10 identical comparisons: the evidence is 20 prompts, not 200 games
    rng = np.random.default_rng(0)
    per_prompt = rng.random(20) < 0.6
    values = np.repeat(per_prompt.astype(float), 10)
    prefs = pl.DataFrame({"id": np.repeat(np.arange(20), 10), "system_a": "x", "system_b": "y", "value": values})
    clustered = rt.win_rates(prefs, n_resamples=2000).row(0, named=True)
    naive = rt.win_rates(prefs.with_columns(pl.int_range(pl.len()).alias("id")), n_resamples=2000).row(0, named=True)
    width = clustered["ci_high"] - clustered["ci_low"]
    assert width > 2.5 * (naive["ci_high"] - naive["ci_low"])  # sqrt(10) ~ 3.2 in theory
    p = per_prompt.mean()
    assert width == pytest.approx(2 * 1.96 * np.sqrt(p * (1 - p) / 20), rel=0.2)


def test_preferences_from_scores_of_several_systems():
    scores = pl.DataFrame(
        {"id": [1, 1, 1, 2, 2, 2], "system": ["a", "b", "c"] * 2, "score": [0.9, 0.5, 0.5, 0.2, None, 0.21]}
    )
    p = rt.preferences_from_scores(scores, tolerance=0.05)
    assert p.select("id", "system_a", "system_b", "preferred").rows() == [
        (1, "a", "b", "A"),
        (1, "a", "c", "A"),
        (1, "b", "c", "tie"),
        (2, "a", "c", "tie"),  # within the tolerance; b has no score on item 2
    ]
    assert rt.win_rates(p, n_resamples=10).height == 6


def test_preferences_from_scores_errors():
    with pytest.raises(ValueError, match="several scores for one"):
        rt.preferences_from_scores(pl.DataFrame({"id": [1, 1], "system": ["a", "a"], "score": [0.1, 0.2]}))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['system'\]"):
        rt.preferences_from_scores(pl.DataFrame({"id": [1], "score": [0.1]}))


def test_unknown_by_column_is_refused():
    prefs = pl.DataFrame({"id": [1], "system_a": ["a"], "system_b": ["b"], "value": [1.0]})
    with pytest.raises(ValueError, match=r"by: \['subset'\] are not columns"):
        rt.win_rates(prefs, by=("subset",))


def test_preferences_from_verdicts_of_graded_systems():
    rubric = rt.Rubric.from_dict(
        [
            {"name": "good", "requirement": "Is good", "weight": 2},
            {"name": "rude", "requirement": "Is rude", "weight": -1},
        ]
    )
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if c.name in text else "UNMET")
    answers = {"x": ["good", "good rude", "meh"], "y": ["meh", "good", "meh"]}
    verdicts = {
        s: rt.grade(pl.DataFrame({"submission": a}), rubric, model=judge, progress=False) for s, a in answers.items()
    }
    p = rt.preferences_from_verdicts(verdicts, rubric)
    assert p.select("id", "system_a", "system_b", "preferred").rows() == [
        (0, "x", "y", "A"),
        (1, "x", "y", "B"),  # the rude answer loses on score
        (2, "x", "y", "tie"),
    ]
    with pytest.raises(ValueError, match="at least two systems"):
        rt.preferences_from_verdicts({"x": verdicts["x"]}, rubric)


def test_win_rates_read_preferred_as_readme_describes_preference_tables() -> None:
    """Before: a table with ``preferred`` (A / tie / B) and no ``value`` was refused."""
    base = {"id": [1, 2, 3], "system_a": ["x", "x", "y"], "system_b": ["y", "y", "x"]}
    by_word = rt.win_rates(pl.DataFrame({**base, "preferred": ["A", "tie", "B"]}), n_resamples=50)
    by_value = rt.win_rates(pl.DataFrame({**base, "value": [1.0, 0.5, 0.0]}), n_resamples=50)
    assert by_word.equals(by_value)
    with pytest.raises(ValueError, match="preferred must be 'A', 'tie' or 'B'"):
        rt.win_rates(pl.DataFrame({**base, "preferred": ["A", "x", "B"]}))


def test_no_resamples_gives_point_estimates_as_length_control_does():
    """Before: win_rates(n_resamples=0) was refused while length_controlled_win_rates accepted it."""
    prefs = pl.DataFrame({"id": [1, 2, 3], "system_a": ["x", "x", "y"], "system_b": ["y", "y", "x"],
                          "preferred": ["A", "tie", "B"]})  # fmt: skip
    w = rt.win_rates(prefs, n_resamples=0)
    assert w.filter(pl.col("system") == "x")["win_rate"].item() == pytest.approx(2.5 / 3)
    assert w["ci_low"].null_count() == w["ci_high"].null_count() == w.height == 2
    with pytest.raises(ValueError, match="n_resamples must be an int >= 0"):
        rt.win_rates(prefs, n_resamples=-1)


def test_a_null_prompt_id_is_refused_and_by_may_be_one_name():
    prefs = pl.DataFrame({"id": [1, None, 3], "system_a": ["x", "x", "y"], "system_b": ["y", "y", "x"],
                          "preferred": ["A", "tie", "B"], "criterion": ["c", "c", "c"]})  # fmt: skip
    with pytest.raises(ValueError, match=r"prefs: 1 row\(s\) have a null id"):
        rt.win_rates(prefs, n_resamples=0)
    ok = prefs.with_columns(pl.col("id").fill_null(2))
    assert rt.win_rates(ok, by="criterion", n_resamples=0).equals(rt.win_rates(ok, by=["criterion"], n_resamples=0))
