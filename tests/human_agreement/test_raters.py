"""inter_rater: a metric asked for that does not apply says so."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rubrictools as rt

LABELS = ["MET", "MET", "UNMET", "MET", "UNMET", "UNMET", "MET", "MET", "UNMET", "UNMET"]
HUMAN = pl.DataFrame({"id": np.repeat(np.arange(5), 2), "criterion": "c", "rater": ["a", "b"] * 5, "label": LABELS})


def _icc21(x: np.ndarray) -> float:
    """Shrout and Fleiss ICC(2,1) from the two-way ANOVA mean squares."""
    n, k = x.shape
    grand = x.mean()
    msr = k * ((x.mean(1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(0) - grand) ** 2).sum() / (k - 1)
    sse = ((x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + grand) ** 2).sum()
    mse = sse / ((n - 1) * (k - 1))
    return float((msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n))


def test_icc_asked_for_on_a_binary_criterion_is_computed_on_its_0_1_values() -> None:
    """Before: metrics=["icc2"] on a binary criterion returned an empty table without a word."""
    t = rt.inter_rater(HUMAN, metrics=["icc2"], n_resamples=0)
    x = (np.array(LABELS) == "MET").astype(float).reshape(5, 2)
    assert t["metric"].to_list() == ["icc2"] and t["value"].item() == pytest.approx(_icc21(x))
    default = rt.inter_rater(HUMAN, n_resamples=0)["metric"].to_list()
    assert "icc2" not in default  # not offered unasked on binary labels


def test_an_ordered_metric_on_nominal_labels_is_refused_or_left_out_with_a_warning() -> None:
    nominal = rt.Rubric.from_dict(
        [{"name": "c", "requirement": "which", "scale": "nominal",
          "options": [{"label": "MET", "value": 1.0}, {"label": "UNMET", "value": 0.0}]}]
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"no metric asked for applies: \['icc2'\] on \{'criterion': 'c'\}"):
        rt.inter_rater(HUMAN, nominal, metrics=["icc2"], n_resamples=0)
    with pytest.warns(UserWarning, match=r"left out \['icc3'\]"):
        t = rt.inter_rater(HUMAN, nominal, metrics=["icc3", "fleiss_kappa"], n_resamples=0)
    assert t["metric"].to_list() == ["fleiss_kappa"]
