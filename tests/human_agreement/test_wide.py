"""Wide label sheets become the long label table that agreement reads."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt

RUBRIC = rt.Rubric.from_dict(
    [
        {"name": "clarity", "requirement": "Clear"},
        {"name": "overall_tone", "requirement": "Polite"},
    ]
)


def test_rater_criterion_columns_split_on_the_criterion_names():
    wide = pl.DataFrame(
        {
            "id": ["a", "b"],
            "rater_a_clarity": ["MET", "UNMET"],
            "rater_b_clarity": ["MET", None],
            "rater_a_overall_tone": ["UNMET", "MET"],
            "notes": ["x", "y"],  # ignored
        }
    )
    long = rt.labels_from_wide(wide, criteria=RUBRIC)
    assert long.columns == ["id", "criterion", "rater", "label"]
    assert long.rows() == [
        ("a", "clarity", "rater_a", "MET"),
        ("a", "clarity", "rater_b", "MET"),
        ("a", "overall_tone", "rater_a", "UNMET"),
        ("b", "clarity", "rater_a", "UNMET"),
        ("b", "overall_tone", "rater_a", "MET"),
    ]
    only_b = rt.labels_from_wide(wide, criteria=RUBRIC, raters=["rater_b"])
    assert only_b["rater"].unique().to_list() == ["rater_b"]
    # the long table is what inter_rater reads
    t = rt.inter_rater(long, RUBRIC, n_resamples=0, metrics=["percent_agreement"])
    assert t.filter(pl.col("criterion") == "clarity")["value"].item() == 1.0


def test_one_column_per_rater_for_one_criterion():
    wide = pl.DataFrame({"id": [1, 2, 3], "ann": [4, 5, 3], "bob": [4, 4, None]})
    long = rt.labels_from_wide(wide, criterion="quality", raters=["ann", "bob"])
    assert long.height == 5 and long["label"].to_list() == ["4", "4", "5", "4", "3"]
    assert set(long["criterion"]) == {"quality"}


def test_bad_arguments_name_what_is_wrong():
    wide = pl.DataFrame({"id": [1], "ann": [4]})
    with pytest.raises(ValueError, match=r"criteria= .* or criterion="):
        rt.labels_from_wide(wide)
    with pytest.raises(ValueError, match="criterion= needs raters="):
        rt.labels_from_wide(wide, criterion="q")
    with pytest.raises(ValueError, match=r"raters: \['bob'\] are not columns"):
        rt.labels_from_wide(wide, criterion="q", raters=["bob"])
    with pytest.raises(ValueError, match="no column is named"):
        rt.labels_from_wide(wide, criteria=["clarity"])
    with pytest.raises(ValueError, match="id_column"):
        rt.labels_from_wide(wide, id_column="sid", criteria=["clarity"])


def test_a_pandas_sheet_with_a_blank_cell_keeps_whole_number_labels() -> None:
    """Before: a blank cell made pandas store the column as float, labels came out '4.0' and
    rt.agreement refused them as labels the rubric does not allow."""
    pd = pytest.importorskip("pandas")
    sheet = pd.DataFrame({"id": [1, 2, 3], "ann1_tone": [4, None, 2], "ann2_tone": [3, 5, 1]})
    long = rt.labels_from_wide(sheet, criteria=["tone"])
    assert long["label"].to_list() == ["4", "3", "5", "2", "1"]
    options = [{"label": str(k), "value": (k - 1) / 4} for k in range(1, 6)]
    rubric = rt.Rubric.from_dict([{"name": "tone", "requirement": "x", "options": options}])
    verdicts = long.filter(pl.col("rater") == "ann2").select("id", "criterion", pl.col("label").alias("verdict"))
    assert rt.agreement(verdicts, long, rubric, metrics=["accuracy"], n_resamples=0).height == 1
