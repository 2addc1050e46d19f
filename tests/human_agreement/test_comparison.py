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
