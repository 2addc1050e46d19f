"""Dataset.add_item: ground truth checked against the rubric on the way in, then usable everywhere."""

from __future__ import annotations

import polars as pl
import pytest

import rubrictools as rt


def test_items_are_checked_appended_and_graded() -> None:
    ds = rt.datasets.load("demo_support")
    n_subs, n_labels = ds.submissions.height, ds.human.height
    new = ds.add_item("Go to Settings > Security and press Reset. Happy to help!", id="n1",
                      ground_truth=["met", "MET", "met", "unmet", "UNMET"], query="How do I reset?")  # fmt: skip
    assert new == "n1" and ds.submissions.height == n_subs + 1 and ds.human.height == n_labels + 5
    added = ds.human.filter(pl.col("id") == "n1")
    assert added["label"].to_list() == ["MET", "MET", "MET", "UNMET", "UNMET"]  # stored in the criterion's spelling
    assert set(added["rater"]) == {"ground_truth"}
    ds.add_item("Thanks for reaching out.", id="n2", ground_truth={"polite": "MET", "gives_steps": None})
    assert ds.human.filter(pl.col("id") == "n2")["criterion"].to_list() == ["polite"]
    judge = rt.ScriptedJudge(rule=lambda text, c: "MET" if "help" in text.lower() else "UNMET")
    v = rt.grade(ds.submissions.filter(pl.col("id").is_in(["n1", "n2"])), ds.rubric, model=judge, id_column="id",
                 progress=False, record=False)  # fmt: skip
    a = rt.agreement(v, ds.human.filter(pl.col("id").is_in(["n1", "n2"])), ds.rubric, n_resamples=0)
    assert a["n"].max() >= 1


def test_bad_ground_truth_is_refused_before_anything_is_stored() -> None:
    ds = rt.datasets.load("demo_support")
    before = (ds.submissions.height, ds.human.height)
    cases = [
        ({"ground_truth": ["MET"]}, "1 values for the rubric's 5 criteria"),
        ({"ground_truth": {"friendly": "MET"}}, r"\['friendly'\] are not criteria"),
        ({"ground_truth": {"polite": "sometimes"}}, "'sometimes' is not a label of criterion 'polite'"),
        ({"id": "t000"}, "already has an item with this id"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            ds.add_item("An answer.", **kwargs)
    assert (ds.submissions.height, ds.human.height) == before
    own = rt.Rubric.from_dict([{"name": "q1", "requirement": "Answers question 1",
                               "options": [{"label": "yes", "value": 1}, {"label": "no", "value": 0}]}])  # fmt: skip
    ds.add_item("Yes.", id="q", rubric=own, ground_truth=["yes"])
    assert ds.submissions.filter(pl.col("id") == "q")["rubric"][0] is not None
