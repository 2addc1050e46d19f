"""compare: two judges that share nothing to compare say why."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

HUMAN = pl.DataFrame({"id": range(6), "criterion": "a", "label": ["MET", "UNMET"] * 3})
A = HUMAN.rename({"label": "verdict"}).with_columns(pl.lit("judge-1").alias("judge"))
B = A.with_columns(pl.lit("MET").alias("verdict"), pl.lit("judge-2").alias("judge"))


def test_grouping_by_each_tables_own_judge_name_is_refused_naming_the_column() -> None:
    """Before: by=["criterion", "judge"] returned an empty table (no pair has both names)."""
    with pytest.raises(ValueError, match=r"column 'judge' takes different values .*\['judge-1'\] vs \['judge-2'\]"):
        rt.compare(A, B, HUMAN, metric="accuracy", n_resamples=0, by=["criterion", "judge"])
    out = rt.compare(A, B, HUMAN, metric="accuracy", n_resamples=0)  # by criterion: the names do not matter
    assert out.select("value_a", "value_b", "diff").row(0) == (1.0, 0.5, 0.5)


def test_level_score_reaches_the_score_metrics_that_share_a_name_with_criterion_ones() -> None:
    """Before: metric="spearman" always compared per criterion; the score-level one was unreachable."""
    import numpy as np

    rng = np.random.default_rng(0)
    rubric = rt.Rubric.from_dict([{"name": "a", "requirement": "x", "weight": 2}, {"name": "b", "requirement": "y"}])
    h = pl.DataFrame({"id": np.repeat(np.arange(40), 2), "criterion": ["a", "b"] * 40,
                      "label": rng.choice(["MET", "UNMET"], 80)})  # fmt: skip
    va = h.rename({"label": "verdict"})
    vb = va.with_columns(pl.when(pl.int_range(80) % 3 == 0).then(pl.lit("MET")).otherwise("verdict").alias("verdict"))
    score = rt.compare(va, vb, h, rubric, metric="spearman", level="score", n_resamples=0)
    assert score["criterion"].to_list() == ["__score__"] and score["value_a"].item() == pytest.approx(1.0)
    sa = rt.score(vb, rubric).join(rt.score(va, rubric), on="id")  # judge b's scores against the humans' (= a's)
    rho = sa.select(pl.corr("score", "score_right", method="spearman")).item()
    assert score["value_b"].item() == pytest.approx(rho)
    assert rt.compare(va, vb, h, rubric, metric="spearman", n_resamples=0)["criterion"].to_list() == ["a", "b"]
    with pytest.raises(ValueError, match="'accuracy' is not a score-level metric"):
        rt.compare(va, vb, h, rubric, metric="accuracy", level="score", n_resamples=0)
