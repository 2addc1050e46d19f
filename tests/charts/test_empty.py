"""Every chart refuses an empty table with a clear error (never an empty chart or an IndexError)."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

pytest.importorskip("altair")

RUBRIC = rt.Rubric.from_dict([{"name": "a", "requirement": "r"}])


@pytest.mark.parametrize(
    ("chart", "args"),
    [
        ("forest", ()),
        ("verdicts", (RUBRIC,)),
        ("leaderboard", ()),
        ("win_matrix", ()),
        ("position_bias", ()),
        ("before_after", ()),
    ],
)
def test_an_empty_table_is_a_clear_error(chart, args) -> None:
    """Before: forest drew an empty chart titled " with 95% bootstrap interval" and verdicts
    raised IndexError."""
    empty = pl.DataFrame({"id": [], "criterion": [], "verdict": [], "value": []})
    with pytest.raises(ValueError, match=r"the table is empty \(0 rows\)"):
        getattr(rt.charts, chart)(empty, *args)
